// Command hello is the Go hello world that the benchmark compares start-up against.
package main

import "fmt"

func main() { fmt.Println("hello") }
