package stateclient

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrorCode is the sentinel of one JSON-RPC error code (ErrSessionExists, ErrConflict…): an
// *Error answered with that code matches it with errors.Is.
type ErrorCode struct {
	Code int
	Name string
}

func (e *ErrorCode) Error() string { return fmt.Sprintf("herrscher-state: %s (%d)", e.Name, e.Code) }

// Error is an error answered by the server: its code, message and data as sent.
type Error struct {
	// Method is the method called.
	Method  string
	Code    int
	Message string
	// Data is the error's data as sent (ConflictData, StorageFailureData, InvalidParamsData…).
	Data json.RawMessage
}

func (e *Error) Error() string {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return fmt.Sprintf("%s: %s (%d) %s", e.Method, e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Method, e.Message, e.Code)
}

// Is reports whether target is the sentinel of e's code, so errors.Is(err, ErrConflict) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*ErrorCode)
	return ok && t.Code == e.Code
}

// Unwrap gives the sentinel of e's code, or nil for a code this client does not know.
func (e *Error) Unwrap() error {
	for _, c := range errorCodes {
		if c.Code == e.Code {
			return c
		}
	}
	return nil
}

// DecodeData decodes the error's data into v (a *ConflictData for ErrConflict, a
// *StorageFailureData for ErrStorageFailure, an *InvalidParamsData for ErrInvalidParams).
func (e *Error) DecodeData(v interface{}) error {
	if len(e.Data) == 0 {
		return fmt.Errorf("%s: error %d carries no data", e.Method, e.Code)
	}
	return json.Unmarshal(e.Data, v)
}

// ErrClosed is returned for calls on a closed client and wraps the reason a connection ended
// (the server exited, the socket closed): a call never waits on a dead server.
var ErrClosed = errors.New("herrscher-state: connection closed")

// closedError is ErrClosed with the reason the connection ended.
type closedError struct{ cause error }

func (e *closedError) Error() string {
	if e.cause == nil {
		return ErrClosed.Error()
	}
	return fmt.Sprintf("%s: %v", ErrClosed, e.cause)
}
func (e *closedError) Is(target error) bool { return target == ErrClosed }
func (e *closedError) Unwrap() error        { return e.cause }
