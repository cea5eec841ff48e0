// state/*: the top-level fields of state.json.
import * as z from 'zod';
import { defineMethod } from './define.js';
import { SessionName, WriterKey } from './fields.js';
import { HomeRef, StateDocument } from './model.js';

const Changed = z.object({ changed: z.boolean().describe('false when the value was already set: nothing was written') });
const NoParams = z.strictObject({}).default({});

const Revision = z.number().int().describe('Increases with every committed state change.');
const Epoch = z.string().describe('This run of the server: revisions count from 0 again in the next run, so a revision is comparable only within its epoch.');

export const stateGet = defineMethod({
  method: 'state/get',
  goName: 'State',
  summary: 'The state document as committed, with config defaults (state/applyDefaults) overlaid unless persisted is true.',
  params: () => z
    .strictObject({
      persisted: z.boolean().optional().describe('true: exactly what state.json holds, without the defaults overlay (what a replica rebuilds from); -32020 (data.code EINVAL, the message says why) while state.json, changed by another process, cannot be loaded.'),
    })
    .default({}),
  result: () => z.object({ state: StateDocument, revision: Revision, epoch: Epoch }),
  errors: ['StorageFailure'],
  example: { params: {}, result: { state: { home: { id: '987', type: 'category' }, sessions: [] }, revision: 7, epoch: 'e0c6…' } },
});

export const stateSave = defineMethod({
  method: 'state/save',
  summary: 'Replaces the whole document as Go\'s Save writes it (row order, every field, unknown fields), if revision is still the current one; else -32050 with data.revision.',
  params: () => z.strictObject({
    state: StateDocument.describe('The whole document. A row without an incarnation (or repeating an earlier one) gets a fresh one, as Go\'s Save; ids are written as given.'),
    revision: Revision.describe('The revision the document was read at (state/get, watch/subscribe or the feed).'),
    epoch: Epoch.optional().describe('The epoch of that revision (state/get, watch/subscribe). Given and not the current one: -32050, as a stale revision (a revision of an earlier run can equal one of this run). Omitted: the revision alone is compared.'),
    writer: WriterKey,
  }),
  result: () => z.object({
    revision: Revision.describe('The revision now: the save\'s own commit, or unchanged when nothing changed.'),
    changed: z.boolean().describe('false when the document was already exactly this: nothing was written'),
  }),
  errors: ['Conflict', 'StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: {
    params: { state: { home: { id: '987', type: 'category' }, sessions: [{ id: 's_main', incarnation: 'inc_YTAL7AU4NCMZHOE7P7QAFCM67N', name: 'main', channelID: 'c1', type: 'text', cmd: 'claude' }] }, revision: 7 },
    result: { revision: 8, changed: true },
  },
});

export const stateApplyDefaults = defineMethod({
  method: 'state/applyDefaults',
  goName: 'ApplyDefaults',
  summary: 'Seeds home, workspace and source where the file has none, as an overlay that is never written to state.json.',
  params: () => z.strictObject({ home: HomeRef.optional(), workspace: z.string().optional(), source: z.string().optional() }),
  result: () => z.object({ state: StateDocument }),
  errors: [],
  example: { params: { home: { id: 'cfg', type: 'category' }, workspace: '/home/u/dev' }, result: { state: { home: { id: 'cfg', type: 'category' }, workspace: '/home/u/dev', sessions: null } } },
});

export const stateSetHome = defineMethod({
  method: 'state/setHome',
  goName: 'SetHome',
  summary: 'Sets the home (category or forum) sessions are created under.',
  params: () => z.strictObject({ home: HomeRef }),
  result: () => Changed,
  errors: ['StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: { params: { home: { id: '987', type: 'category' } }, result: { changed: true } },
});

/** A one-string setter; its Go name is the state package's setter of that field (`SetWorkspace`). */
const setter = <const M extends string, K extends string>(method: M, key: K, summary: string, value: string, changed: boolean) =>
  defineMethod({
    method,
    goName: `Set${key[0]!.toUpperCase()}${key.slice(1)}`,
    summary,
    params: () => z.strictObject({ [key]: z.string() } as Record<K, z.ZodString>),
    result: () => Changed,
    errors: ['StorageFailure', 'ShuttingDown'],
    mutates: true,
    example: { params: { [key]: value } as never, result: { changed } },
  });

export const stateSetWorkspace = setter('state/setWorkspace', 'workspace', 'Sets the workspace root ("" removes it).', '/home/u/dev', true);
export const stateSetSource = setter('state/setSource', 'source', 'Sets the Herrscher source checkout ("" removes it).', '/home/u/src/herrscher', true);
export const stateSetStatusMessageID = setter('state/setStatusMessageID', 'statusMessageID', 'Sets the id of the status message.', 'm-1', false);
export const stateSetInstanceID = setter('state/setInstanceID', 'instanceID', 'Sets the instance id used in socket names and qualified names.', 'alice', true);

export const stateWorkspaceRoot = defineMethod({
  method: 'state/workspaceRoot',
  goName: 'WorkspaceRoot',
  summary: 'The workspace, else the legacy repo field, else "".',
  params: () => NoParams,
  result: () => z.object({ workspaceRoot: z.string() }),
  errors: [],
  example: { params: {}, result: { workspaceRoot: '/home/u/dev' } },
});

export const stateSourceDir = defineMethod({
  method: 'state/sourceDir',
  goName: 'SourceDir',
  summary: 'The source checkout, or "".',
  params: () => NoParams,
  result: () => z.object({ sourceDir: z.string() }),
  errors: [],
  example: { params: {}, result: { sourceDir: '/home/u/src/herrscher' } },
});

export const stateQualifiedName = defineMethod({
  method: 'state/qualifiedName',
  goName: 'QualifiedName',
  summary: '<instanceID>__<name>, or the name alone when there is no instance id.',
  params: () => z.strictObject({ name: SessionName }),
  result: () => z.object({ qualifiedName: z.string() }),
  errors: [],
  example: { params: { name: 'main' }, result: { qualifiedName: 'alice__main' } },
});
