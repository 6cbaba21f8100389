package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/term"
)

// errInterrupt is what a lineReader returns for Ctrl-C at a prompt, or when
// its context is done.
var errInterrupt = errors.New("interrupted")

// lineReader reads the lines of a chat.
type lineReader interface {
	// readLine shows prompt (on a terminal) and returns the next line. It
	// returns io.EOF at the end of input (Ctrl-D), errInterrupt for
	// Ctrl-C or when ctx is done.
	readLine(ctx context.Context, prompt string) (string, error)
}

// pipeReader reads lines from input that is not a terminal (or not a
// file), on a goroutine (readLines).
type pipeReader struct {
	lines <-chan string
	env   Env
	tty   bool
}

func (p *pipeReader) readLine(ctx context.Context, prompt string) (string, error) {
	if p.tty {
		fmt.Fprint(p.env.Stderr, prompt)
	}
	select {
	case <-ctx.Done():
		return "", errInterrupt
	case line, ok := <-p.lines:
		if !ok {
			if ctx.Err() != nil {
				return "", errInterrupt
			}
			return "", io.EOF
		}
		return line, nil
	}
}

// termReader reads lines from a terminal with line editing and history
// (golang.org/x/term): the terminal is in raw mode only while a line is
// read, so Ctrl-C during a turn is a signal as usual.
type termReader struct {
	in  *os.File
	out io.Writer
	t   *term.Terminal
	// ctrlC is set when the input held Ctrl-C (x/term reports it as EOF).
	ctrlC atomic.Bool
	// reading: a ReadLine is under way (one left behind by a done ctx).
	reading chan struct{}
}

func newTermReader(in *os.File, out io.Writer) *termReader {
	r := &termReader{in: in, out: out, reading: make(chan struct{}, 1)}
	r.t = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{ctrlCReader{r}, out}, "")
	return r
}

// ctrlCReader notes Ctrl-C in what the terminal reads.
type ctrlCReader struct{ r *termReader }

func (c ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.in.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		c.r.ctrlC.Store(true)
	}
	return n, err
}

func (r *termReader) readLine(ctx context.Context, prompt string) (string, error) {
	select {
	case r.reading <- struct{}{}:
	default:
		return "", errInterrupt
	}
	fd := int(r.in.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		<-r.reading
		return "", err
	}
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		_ = r.t.SetSize(w, h)
	}
	r.t.SetPrompt(prompt)
	r.ctrlC.Store(false)
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := r.t.ReadLine()
		<-r.reading
		done <- result{line, err}
	}()
	select {
	case <-ctx.Done():
		_ = term.Restore(fd, old)
		fmt.Fprintln(r.out)
		return "", errInterrupt
	case res := <-done:
		_ = term.Restore(fd, old)
		if res.err == nil {
			return res.line, nil
		}
		// The line ended without Enter: end the prompt's line, so that
		// what follows (or the shell's prompt) starts on its own.
		fmt.Fprintln(r.out)
		if r.ctrlC.Load() {
			return "", errInterrupt
		}
		return "", io.EOF
	}
}
