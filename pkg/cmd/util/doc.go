// Package util is what the commands share, as kubectl's pkg/cmd/util.
//
//   - The global options, and kubectl's flags bound through client-go's
//     clientcmd (KubeFlags).
//   - Completion, output printers, the terminal.
//   - The watchdog of --command-timeout and the version stamp.
package util
