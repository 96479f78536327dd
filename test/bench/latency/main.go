// Command latency is a TCP proxy on 127.0.0.1 that delays every chunk of
// data by -delay in each direction (a round trip of twice that), order
// kept: hack/bench-inspect.sh puts it in front of its kube-apiserver to
// time the inspection commands against a cluster that far away. TLS passes
// through untouched. It prints its address on stdout and runs until
// killed.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"
)

func main() {
	target := flag.String("target", "", "host:port to forward to")
	delay := flag.Duration("delay", 25*time.Millisecond, "delay of each chunk, each way")
	flag.Parse()
	if *target == "" {
		log.Fatal("latency: -target is required")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Addr())
	_ = os.Stdout.Sync()
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", *target)
			if err != nil {
				log.Print(err)
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() { pipe(up, c, *delay); done <- struct{}{} }()
			go func() { pipe(c, up, *delay); done <- struct{}{} }()
			<-done
		}()
	}
}

// chunk is data read at a time, to be written delay after it.
type chunk struct {
	at   time.Time
	data []byte
}

// pipe copies from src to dst, each chunk written delay after it was read.
func pipe(dst io.WriteCloser, src io.Reader, delay time.Duration) {
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	_ = dst.Close()
	for range queue { // drain, so that the reader ends
	}
}
