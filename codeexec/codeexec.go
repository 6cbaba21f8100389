// Package codeexec runs code that a model writes.
//
// An [Executor] takes code (Python) and input files and returns what the
// code printed and the files it wrote. An LLM agent with a code executor
// looks for a ```tool_code (or ```python) block in each model response,
// runs it, and sends the output back to the model.
//
// Two executors are provided:
//
//   - [BuiltIn] is the model's own code execution (Gemini's code execution
//     tool): the provider runs the code and returns executableCode and
//     codeExecutionResult parts. Nothing runs locally.
//   - [Local] runs Python on this machine in its own Linux namespaces,
//     with a timeout, a process limit, a disk quota, resource limits, writes
//     confined to its working directory and no socket outside. Reading
//     files is not confined, so it is NOT a sandbox for hostile code: see
//     its documentation for exactly what is confined. No agent uses it
//     unless configured to.
package codeexec

import (
	"context"
	"errors"
)

// File is a file given to, or produced by, executed code.
type File struct {
	// Name is the file's path relative to the working directory, with
	// forward slashes.
	Name string
	// MIMEType is the file's media type.
	MIMEType string
	// Data is the file's content.
	Data []byte
}

// Input is one execution.
type Input struct {
	// Code is the program, in Python.
	Code string
	// Files are written to the working directory before the code runs.
	Files []File
}

// Result is the outcome of an execution that ran. A program that failed
// (an exception, a non-zero exit, a limit hit) is a Result with Stderr
// set, not an error.
type Result struct {
	// Stdout and Stderr are what the program printed, possibly truncated.
	Stdout string
	Stderr string
	// Files are the files the program wrote or changed in its working
	// directory.
	Files []File
	// Failed reports that the program did not complete successfully.
	Failed bool
}

// Executor runs code. Implementations must be safe for concurrent use.
type Executor interface {
	// Execute runs the code of in. An error means the code could not be
	// run at all (no interpreter, no sandbox); the model is not told.
	Execute(ctx context.Context, in Input) (Result, error)
}

// ErrUnconfined is wrapped by the error of a Local executor that refuses
// to run code because the confinement it promises is unavailable here.
var ErrUnconfined = errors.New("codeexec: confinement unavailable")

// ErrBuiltIn is returned by BuiltIn.Execute: the provider runs the code.
var ErrBuiltIn = errors.New("codeexec: built-in code execution runs in the model, not locally")

// BuiltIn is the model's own code execution: an LLM agent with it adds the
// provider's code execution tool to every request and runs nothing itself.
// Only Gemini models run it; other adapters reject the request with
// model.ErrUnsupportedContent.
type BuiltIn struct{}

// Execute implements Executor; it always fails with ErrBuiltIn.
func (BuiltIn) Execute(context.Context, Input) (Result, error) { return Result{}, ErrBuiltIn }
