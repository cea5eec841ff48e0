package stateclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
)

// Client is one connection to a server. Its methods are safe for concurrent use: requests are
// written whole under a lock and answers are matched by id, so many goroutines share it.
type Client struct {
	rw     io.ReadWriteCloser
	wmu    sync.Mutex
	mu     sync.Mutex
	nextID int64
	// pending holds the reply channel of each request not yet answered.
	pending map[int64]chan response
	// abandoned holds the ids of calls whose ctx ended first: their late answers are dropped,
	// while an answer to an id no call ever waited for ends the connection.
	abandoned map[int64]struct{}
	// maxMessage bounds a reply line: a longer one ends the connection before more is read.
	maxMessage int
	// watchers by subscription id; early holds notifications for a subscription whose
	// watch/subscribe answer has not been read yet (only while one is in flight).
	watchers    map[string]*Watcher
	subscribing int
	early       map[string][]notification
	done        chan struct{}
	err         error
	onClose     func() error
	closeOnce   sync.Once
	closeErr    error
	// process is the server Spawn started.
	process *os.Process
}

type response struct {
	result json.RawMessage
	err    *Error
	// closed: the connection ended before the answer came.
	closed bool
}

type notification struct {
	method string
	params json.RawMessage
}

type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// earlyLimit bounds notifications kept for a subscription being set up: the server sends none
// before it answers watch/subscribe, so this only guards against a misbehaving peer.
const earlyLimit = 4096

// NewClient speaks JSON-RPC (newline-delimited JSON) over rw, an already open connection to a
// server: Dial and Spawn use it; a caller with its own transport may too. Closing the client
// closes rw.
func NewClient(rw io.ReadWriteCloser) *Client {
	return newClient(rw, DefaultMaxMessageBytes)
}

// DefaultMaxMessageBytes is the server's default message limit (serve --max-message-bytes): the
// longest reply line a client reads.
const DefaultMaxMessageBytes = 64 * 1024 * 1024

func newClient(rw io.ReadWriteCloser, maxMessage int) *Client {
	if maxMessage <= 0 {
		maxMessage = DefaultMaxMessageBytes
	}
	c := &Client{
		rw:         rw,
		maxMessage: maxMessage,
		abandoned:  map[int64]struct{}{},
		pending:    map[int64]chan response{},
		watchers:   map[string]*Watcher{},
		early:      map[string][]notification{},
		done:       make(chan struct{}),
	}
	go c.read()
	return c
}

// read is the one reader of the connection: it hands each answer to its caller and each
// notification to its watcher, and fails every waiting call when the connection ends. A broken
// peer (an endless line, bytes that are not a JSON-RPC object, an answer no call waits for)
// ends the connection too: nothing waits on it, nothing grows without bound.
func (c *Client) read() {
	r := bufio.NewReader(c.rw)
	var cause error
	for {
		line, err := readLine(r, c.maxMessage)
		if len(bytes.TrimSpace(line)) > 0 && err == nil {
			if derr := c.dispatch(line); derr != nil {
				cause = fmt.Errorf("the server sent a malformed reply: %w", derr)
				break
			}
		}
		if err != nil {
			cause = err
			break
		}
	}
	if errors.Is(cause, io.EOF) {
		cause = errors.New("the server closed the connection")
	} else {
		_ = c.rw.Close() // nothing more is read from, or sent to, a peer we cannot trust
	}
	c.fail(&closedError{cause: cause})
}

// readLine reads one line of at most max bytes (plus its "\r\n"); a longer one is an error
// before more of it is buffered.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 {
			return nil, fmt.Errorf("the server sent a malformed reply: a line over the message limit of %d bytes", max)
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

func (c *Client) dispatch(line []byte) error {
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		return fmt.Errorf("JSON that is not an object: %s", quote(trimmed))
	}
	var m wireMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	if m.Method != "" {
		if len(m.ID) == 0 {
			c.notification(notification{method: m.Method, params: m.Params})
		}
		return nil // a request from the server: this client serves none
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		if m.Error != nil {
			// An error with id null: the server could not read a message of ours.
			return fmt.Errorf("the server refused a message: %s (%d)", m.Error.Message, m.Error.Code)
		}
		return fmt.Errorf("an answer with an id this client never sent: %s", m.ID)
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	_, abandoned := c.abandoned[id]
	delete(c.abandoned, id)
	c.mu.Unlock()
	if !ok {
		if abandoned {
			return nil // the caller gave up (context cancelled); the answer is dropped
		}
		return fmt.Errorf("an answer to id %d, which no call waits for", id)
	}
	if m.Error != nil {
		ch <- response{err: &Error{Code: m.Error.Code, Message: m.Error.Message, Data: m.Error.Data}}
	} else {
		ch <- response{result: m.Result}
	}
	return nil
}

// quote is at most 200 bytes of what the peer sent, for an error message.
func quote(b []byte) string {
	if len(b) > 200 {
		return strconv.Quote(string(b[:200])) + "..."
	}
	return strconv.Quote(string(b))
}

func (c *Client) notification(n notification) {
	var head struct {
		Subscription string `json:"subscription"`
	}
	if json.Unmarshal(n.params, &head) != nil || head.Subscription == "" {
		return
	}
	c.mu.Lock()
	w, ok := c.watchers[head.Subscription]
	if !ok && c.subscribing > 0 && len(c.early[head.Subscription]) < earlyLimit {
		c.early[head.Subscription] = append(c.early[head.Subscription], n)
	}
	c.mu.Unlock()
	if ok {
		w.deliver(n)
	}
}

// fail ends the client: every waiting call and every watcher gets err.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = map[int64]chan response{}
	watchers := c.watchers
	c.watchers = map[string]*Watcher{}
	close(c.done)
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- response{closed: true}
	}
	for _, w := range watchers {
		w.end(err)
	}
}

// Err is why the connection ended, or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) write(v interface{}) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.writeBytes(b)
}

func (c *Client) writeBytes(b []byte) error {
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.rw.Write(b)
	return err
}

// Call calls method with params (a struct or map marshalled as the params object) and decodes
// the result into result (nil to drop it). The generated methods use it; it is exported for a
// method this client is older than.
func (c *Client) Call(ctx context.Context, method string, params, result interface{}) error {
	return c.call(ctx, method, params, result)
}

func (c *Client) call(ctx context.Context, method string, params, result interface{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Marshalled before an id is taken: params JSON cannot carry (NaN, ±Inf, a channel) are
	// refused with nothing sent, and the connection stays as it was.
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: params not sent: %w", method, err)
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(request{JSONRPC: "2.0", ID: id, Method: method, Params: json.RawMessage(raw)}); err != nil {
		c.forget(id)
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		return &closedError{cause: err}
	}
	select {
	case r := <-ch:
		if r.err != nil {
			r.err.Method = method
			return r.err
		}
		if r.closed {
			return c.Err()
		}
		if result == nil || len(r.result) == 0 {
			return nil
		}
		if err := json.Unmarshal(r.result, result); err != nil {
			return fmt.Errorf("%s: unexpected result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		if c.forget(id) {
			c.mu.Lock()
			if c.err == nil {
				c.abandoned[id] = struct{}{}
			}
			c.mu.Unlock()
			// The server stops work it has not started on (a read); a write already queued is
			// still applied. Its answer, if any, is dropped by dispatch.
			_ = c.write(notificationMessage{JSONRPC: "2.0", Method: "$/cancelRequest", Params: cancelParams{ID: id}})
		}
		return ctx.Err()
	}
}

// forget drops a pending call; false when its answer was already taken.
func (c *Client) forget(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

func (c *Client) notify(ctx context.Context, method string, params interface{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return err
	}
	return c.write(notificationMessage{JSONRPC: "2.0", Method: method, Params: params})
}

type request struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      int64       `json:"id"`
	Method  string      `json:"method"`
	Params  interface{} `json:"params"`
}

type notificationMessage struct {
	JSONRPC string      `json:"jsonrpc"`
	Method  string      `json:"method"`
	Params  interface{} `json:"params"`
}

type cancelParams struct {
	ID int64 `json:"id"`
}

// Close ends the connection. For a client from Spawn it first ends the server as a host should:
// shutdown (every pending write finishes), exit, then waits for the process.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		if c.onClose != nil {
			c.closeErr = c.onClose()
		}
		if err := c.rw.Close(); err != nil && c.closeErr == nil && c.Err() == nil {
			c.closeErr = err
		}
		c.fail(&closedError{cause: errors.New("closed by the client")})
	})
	return c.closeErr
}
