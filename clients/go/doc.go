// Package stateclient is the Go client of herrscher-state, the single-writer state server of
// Herrscher: what the host and its bridges use instead of reading and writing state.json,
// transcripts and participant journals themselves.
//
// Dial finds a running server by the same rule as the CLI (an explicit socket, then
// $HERRSCHER_STATE_SOCKET, then the socket recorded by the live server of the state file, then
// the per-user default folder); Spawn starts `herrscher-state serve --stdio` as a child, as the
// host does, optionally handing over the state lock it holds. Every JSON-RPC method is one Go
// method named like the Go state package's function (AddSession, SetResumeToken,
// AppendTranscript…), with a context first: cancelling it stops the wait and tells the server
// ($/cancelRequest). A Client is safe for concurrent use by many goroutines over one connection.
// Server errors match their sentinel with errors.Is (ErrSessionExists, ErrConflict…) and carry
// the server's data (errors.As to *Error). Watch delivers the change feed as typed events.
//
// The types and methods in *_gen.go are generated from the server's contract (src/protocol) by
// `npm run schema`; the structs carry the files' JSON tags, so they marshal like the state
// package's own.
package stateclient
