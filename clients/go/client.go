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
	watchers map[string]*Watcher
	// tracked: every open watcher of a client that reconnects (made again on each connection).
	tracked     map[*Watcher]struct{}
	subscribing int
	early       map[string][]notification
	// earlyLost: subscriptions whose held notifications passed earlyLimit; each ends with
	// watch/overflow once its answer is handled (never a silent gap).
	earlyLost map[string]bool
	done      chan struct{}
	err       error
	onClose   func() error
	closeOnce sync.Once
	closeErr  error
	// process is the server Spawn started.
	process *os.Process
	// endedSilent gives the reason a connection that ended before any answer came ended (Spawn:
	// the server's exit status and last words); nil keeps the cause as read.
	endedSilent func(cause error) error

	// Reconnection (DialOptions.Reconnect): dial opens a new connection; onConnect checks it
	// before anything else is sent on it. gen numbers the connections: the end of an older one
	// is no news. ready is closed while a connection is up (and once the client has ended).
	dial         func(ctx context.Context) (io.ReadWriteCloser, error)
	reconnect    *ReconnectOptions
	onConnect    func(ctx context.Context) error
	gen          int
	reconnecting bool
	ready        chan struct{}
	up           bool
	lostBy       error
	userClosed   bool
	wakeUp       chan struct{}
}

type response struct {
	result json.RawMessage
	err    *Error
	// closed: the connection ended before the answer came, for cause.
	closed bool
	cause  error
}

// notification is one event notification, decoded once as the reader reads it: ev is nil for a
// method this client does not know (a newer server's), err says why params did not decode.
type notification struct {
	ev  Event
	err error
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
// before it answers watch/subscribe, but the reader may read many after the answer before the
// subscribing call has handled it (a catch-up after a reconnection). Past it the watcher ends
// with ErrWatchOverflow (they were once dropped without a word).
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
		tracked:    map[*Watcher]struct{}{},
		ready:      make(chan struct{}),
		up:         true,
		wakeUp:     make(chan struct{}),
		early:      map[string][]notification{},
		earlyLost:  map[string]bool{},
		done:       make(chan struct{}),
	}
	close(c.ready)
	go c.read(rw, 0)
	return c
}

// read is the one reader of the connection: it hands each answer to its caller and each
// notification to its watcher, and fails every waiting call when the connection ends. A broken
// peer (an endless line, bytes that are not a JSON-RPC object, an answer no call waits for)
// ends the connection too: nothing waits on it, nothing grows without bound.
func (c *Client) read(rw io.ReadWriteCloser, gen int) {
	r := bufio.NewReader(rw)
	var cause error
	spoke := false
	for {
		line, err := readLine(r, c.maxMessage)
		if len(bytes.TrimSpace(line)) > 0 && err == nil {
			if derr := c.dispatch(line); derr != nil {
				cause = fmt.Errorf("the server sent a malformed reply: %w", derr)
				break
			}
			spoke = true
		}
		if err != nil {
			cause = err
			break
		}
	}
	if errors.Is(cause, io.EOF) {
		cause = errors.New("the server closed the connection")
	} else {
		_ = rw.Close() // nothing more is read from, or sent to, a peer we cannot trust
	}
	if !spoke && c.endedSilent != nil {
		cause = c.endedSilent(cause)
	}
	c.lost(gen, &closedError{cause: cause}, rw)
}

// lost: connection gen ended. Its calls fail; then the client reconnects, or it has ended.
func (c *Client) lost(gen int, err error, rw io.ReadWriteCloser) {
	c.mu.Lock()
	if gen != c.gen || c.err != nil {
		c.mu.Unlock()
		return
	}
	if c.reconnect == nil || c.dial == nil || c.userClosed {
		c.mu.Unlock()
		c.fail(err)
		return
	}
	pending := c.pending
	c.pending = map[int64]chan response{}
	c.abandoned = map[int64]struct{}{}
	c.lostBy = err
	if c.up {
		c.ready = make(chan struct{})
		c.up = false
	}
	start := !c.reconnecting
	c.reconnecting = true
	c.mu.Unlock()
	_ = rw.Close()
	for _, ch := range pending {
		ch <- response{closed: true, cause: err}
	}
	if start {
		go c.retry(err)
	}
}

// readLine reads one line of at most max bytes (plus its "\r\n"); a longer one is an error
// before more of it is buffered.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	first, err := r.ReadSlice('\n')
	if len(first) > max+2 {
		return nil, fmt.Errorf("the server sent a malformed reply: a line over the message limit of %d bytes", max)
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		// The common case, a line within the buffer: no copy (valid until the next read;
		// dispatch copies what it keeps).
		return first, err
	}
	line := append([]byte(nil), first...)
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 {
			return nil, fmt.Errorf("the server sent a malformed reply: a line over the message limit of %d bytes", max)
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
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
			c.notification(m.Method, m.Params)
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
	if m.Error == nil && len(m.Result) == 0 {
		// No "result" and no error object ("error": null included): not an answer. Taken as a
		// success it told a write's caller the write was done. Refused before the call is
		// taken from pending, so fail() still ends it.
		return fmt.Errorf("an answer to id %d with neither a result nor an error: %s", id, quote(bytes.TrimSpace(line)))
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

func (c *Client) notification(method string, params json.RawMessage) {
	// The event is decoded once, here, before c.mu is taken; its subscription is read from it.
	ev, err := decodeEvent(method, params)
	n := notification{ev: ev, err: err}
	var head struct {
		Subscription string `json:"subscription"`
	}
	if ev != nil && err == nil {
		head.Subscription = subscriptionOf(ev)
	}
	if head.Subscription == "" && (json.Unmarshal(params, &head) != nil || head.Subscription == "") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.watchers[head.Subscription]
	if !ok {
		if c.subscribing > 0 {
			if len(c.early[head.Subscription]) < earlyLimit {
				c.early[head.Subscription] = append(c.early[head.Subscription], n)
			} else if len(c.earlyLost) < earlyLimit {
				c.earlyLost[head.Subscription] = true
			}
		}
		return
	}
	// Under c.mu, so a subscribe's held notifications and the live ones keep their order.
	c.deliverLocked(w, n)
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
	watchers := map[*Watcher]struct{}{}
	for _, w := range c.watchers {
		watchers[w] = struct{}{}
	}
	for w := range c.tracked {
		watchers[w] = struct{}{}
	}
	c.watchers = map[string]*Watcher{}
	c.tracked = map[*Watcher]struct{}{}
	if !c.up {
		close(c.ready) // a call waiting for a reconnection sees the end
		c.up = true
	}
	close(c.done)
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- response{closed: true, cause: err}
	}
	for w := range watchers {
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
	return c.writeLine(append(b, '\n'))
}

// writeLine writes one whole line (its newline included) in one write.
func (c *Client) writeLine(b []byte) error {
	c.mu.Lock()
	rw := c.rw
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := rw.Write(b)
	return err
}

// Call calls method with params (a struct or map marshalled as the params object) and decodes
// the result into result (nil to drop it). The generated methods use it; it is exported for a
// method this client is older than.
func (c *Client) Call(ctx context.Context, method string, params, result interface{}) error {
	return c.call(ctx, method, params, result)
}

func (c *Client) call(ctx context.Context, method string, params, result interface{}) error {
	return c.callOn(ctx, method, params, result, false)
}

// callOn is call; internal (a reconnection's own calls) does not wait for the connection to be
// restored, it is what restores it.
func (c *Client) callOn(ctx context.Context, method string, params, result interface{}, internal bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !internal {
		// While reconnecting, a call waits for the new connection (within its ctx).
		c.mu.Lock()
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Marshalled before an id is taken: params JSON cannot carry (NaN, ±Inf, a channel) are
	// refused with nothing sent, and the connection stays as it was.
	frame := getFrame()
	raw, err := frame.marshalParams(params)
	if err != nil {
		putFrame(frame)
		return fmt.Errorf("%s: params not sent: %w", method, err)
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		putFrame(frame)
		return err
	}
	if c.reconnecting && !internal {
		err := c.lostBy
		c.mu.Unlock()
		putFrame(frame)
		return err // lost again since it was restored: this call was never sent
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	err = c.writeLine(frame.requestLine(id, method, raw))
	putFrame(frame)
	if err != nil {
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
			if r.cause != nil {
				return r.cause
			}
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
		c.mu.Lock()
		c.userClosed = true
		rw := c.rw
		c.mu.Unlock()
		close(c.wakeUp)
		if c.onClose != nil {
			c.closeErr = c.onClose()
		}
		if err := rw.Close(); err != nil && c.closeErr == nil && c.Err() == nil {
			c.closeErr = err
		}
		c.fail(&closedError{cause: errors.New("closed by the client")})
	})
	return c.closeErr
}
