// Package bench checks the benchmarks' recorded results (results.md) against
// what hack/bench.sh measures; its subdirectories are the programs the
// benchmarks run (a Go hello world, a token issuer, a latency client).
package bench
