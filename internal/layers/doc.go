// Package layers holds a test that keeps Loom's package graph layered: a
// package imports only from its own layer or lower ones.
package layers
