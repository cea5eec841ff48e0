package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// echo is the bare vscode-jsonrpc server of the other benches (bench/fixtures/echo-server.mjs)
// on stdio, called with raw Content-Length frames: the least a call to another process costs
// with the stack the server is built on, no client library in between.
type echo struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startEcho(script string) *echo {
	cmd := exec.Command("node", script, "--stdio")
	in, err := cmd.StdinPipe()
	must(err)
	out, err := cmd.StdoutPipe()
	must(err)
	must(cmd.Start())
	return &echo{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
}

// call sends one transcript/append request carrying e and waits for its answer.
func (c *echo) call(name string, e interface{}) {
	c.id++
	body, err := json.Marshal(map[string]interface{}{"jsonrpc": "2.0", "id": c.id, "method": "transcript/append", "params": map[string]interface{}{"name": name, "entry": e}})
	must(err)
	_, err = io.WriteString(c.in, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+string(body))
	must(err)
	n := -1
	for {
		line, err := c.out.ReadString('\n')
		must(err)
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if strings.HasPrefix(line, "Content-Length: ") {
			n, err = strconv.Atoi(strings.TrimPrefix(line, "Content-Length: "))
			must(err)
		}
	}
	if n < 0 {
		must(fmt.Errorf("echo: a frame without Content-Length"))
	}
	_, err = io.ReadFull(c.out, make([]byte, n))
	must(err)
}

func (c *echo) stop() {
	_ = c.in.Close()
	_ = c.cmd.Wait()
}
