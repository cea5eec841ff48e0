// Turns one frame body into a JSON-RPC 2.0 message or the error that answers it, so only
// well-formed messages reach vscode-jsonrpc (which would log and drop the rest).
import { isUtf8 } from 'node:buffer';
import type { Message } from 'vscode-jsonrpc/node';
import { parseExactJson } from '../common/exact-json.js';
import type { FramingError } from './framing-error.js';
import { invalidRequest, methodNotFound, parseError } from './framing-error.js';
import { MAX_METHOD_CHARS, quote } from './limits.js';

type Id = string | number | null;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is string | number => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** Names a JSON value's kind for a message ("Got an array"), without echoing a large value. */
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${quote(v)}`;
  return `the ${typeof v} ${String(v)}`;
}

/**
 * Decodes and checks one frame body; returns the message to deliver or the error to answer.
 * Invalid UTF-8 is a parse error rather than silently becoming U+FFFD in stored text.
 */
export function checkFrame(body: Buffer): Message | FramingError {
  if (!isUtf8(body)) return parseError('the message is not valid UTF-8');
  let value: unknown;
  try {
    // Exact: a Go int or uint64 past 2^53-1 arrives as a bigint, not rounded.
    value = parseExactJson(body.toString('utf8'));
  } catch (err) {
    return parseError(err instanceof Error ? err.message.slice(0, 200) : 'not JSON');
  }
  return checkMessage(value);
}

/**
 * Checks a parsed value against JSON-RPC 2.0; the reply carries the request's id when it has a
 * usable one, else null. Lenient where Go's encoding/json is: `"params": null` (a nil field
 * without omitempty) is read as absent, and so are `"error": null` and a `"result": null` beside
 * an error.
 */
export function checkMessage(value: unknown): Message | FramingError {
  if (Array.isArray(value)) {
    return invalidRequest('batches (JSON arrays) are not supported; send one JSON object per message. Got an array');
  }
  if (!isObject(value)) return invalidRequest(`a message must be a JSON object. Got ${kindOf(value)}`);

  const isResponse = 'result' in value || 'error' in value;
  const method = value.method;
  // A response's id names a request of ours, not theirs: answering with it would confuse the peer.
  const replyId: Id = !isResponse && isId(value.id) ? value.id : null;

  if (value.jsonrpc !== '2.0') {
    const seen = value.jsonrpc === undefined ? 'no "jsonrpc" member' : kindOf(value.jsonrpc);
    return invalidRequest(`"jsonrpc" must be "2.0". Got ${seen}`, replyId);
  }
  if ('id' in value && value.id !== null && !isId(value.id)) {
    return invalidRequest(`"id" must be a string, a number or null. Got ${kindOf(value.id)}`);
  }

  if (method !== undefined) {
    if (typeof method !== 'string') return invalidRequest(`"method" must be a string. Got ${kindOf(method)}`, replyId);
    // vscode-jsonrpc treats an id of null as neither request nor notification and drops it.
    if (value.id === null) {
      return invalidRequest('a request "id" must be a string or a number (omit it for a notification). Got null');
    }
    if (method.length > MAX_METHOD_CHARS && value.id !== undefined) {
      return methodNotFound(`unknown method ${quote(method)}: no method name is longer than ${MAX_METHOD_CHARS} characters`, replyId);
    }
    if (value.params === null) delete value.params;
    if (value.params !== undefined && typeof value.params !== 'object') {
      return invalidRequest(`"params" must be an object or an array. Got ${kindOf(value.params)}`, replyId);
    }
    return value as unknown as Message;
  }

  if (isResponse) return checkResponse(value);
  return invalidRequest('a message needs a "method" (request or notification) or a "result" or "error" (response). Got neither', replyId);
}

function checkResponse(value: Record<string, unknown>): Message | FramingError {
  if (!('id' in value)) return invalidRequest('a response needs an "id". Got none');
  if (value.error === null) delete value.error;
  if (value.error !== undefined) {
    if (value.result === null) delete value.result;
    if ('result' in value) return invalidRequest('a response has "result" or "error", not both. Got both');
    const error = value.error;
    if (!isObject(error)) return invalidRequest(`"error" must be an object. Got ${kindOf(error)}`);
    if (!Number.isInteger(error.code)) return invalidRequest(`"error.code" must be an integer. Got ${kindOf(error.code)}`);
    if (typeof error.message !== 'string') return invalidRequest(`"error.message" must be a string. Got ${kindOf(error.message)}`);
  } else if (!('result' in value)) {
    return invalidRequest('a response needs a "result" or an "error". Got neither');
  }
  return value as unknown as Message;
}

/**
 * Why a notification must be dropped before vscode-jsonrpc sees it, or undefined when it may
 * pass. vscode-jsonrpc reads `$/cancelRequest`'s `params.id` unguarded, outside any try: without
 * params the process died. A notification is never answered, so it is only dropped.
 */
export function unusableNotification(message: Message): string | undefined {
  const m = message as { method?: unknown; id?: unknown; params?: unknown };
  if (typeof m.method === 'string' && m.method.length > MAX_METHOD_CHARS && m.id === undefined) {
    return `a notification named ${quote(m.method)}: no method name is longer than ${MAX_METHOD_CHARS} characters`;
  }
  if (m.method !== '$/cancelRequest' || m.id !== undefined) return undefined;
  const params = m.params;
  if (!isObject(params)) return `$/cancelRequest needs params {"id": <a request id>}. Got ${params === undefined ? 'no params' : kindOf(params)}`;
  if (!isId(params.id)) return `$/cancelRequest needs params.id, a string or a number. Got ${params.id === undefined ? 'none' : kindOf(params.id)}`;
  return undefined;
}
