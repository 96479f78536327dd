// Package testfs makes the files the tests plant that a platform may not
// have: a FIFO (Unix only), a peak RSS read from a child's rusage, an
// environment of the home directory alone.
package testfs
