// Package util is what the commands share (as kubectl's pkg/cmd/util): the
// global options, kubectl's flags bound through client-go's clientcmd
// (KubeFlags), completion, output printers, the terminal, the watchdog of
// --command-timeout and the version stamp.
package util
