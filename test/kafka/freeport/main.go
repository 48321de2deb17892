// Command freeport prints TCP ports on 127.0.0.1 that were free a moment
// ago, one a line, for test/kafka/kafka.sh's callers (just test-kafka,
// .ci/run). With a count N it prints N distinct ports: it holds each
// listener open until all are picked, so the kernel cannot hand the same
// port out twice.
//
//	go run ./test/kafka/freeport [N]
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() {
	n := 1
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: freeport [N]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		var err error
		if n, err = strconv.Atoi(os.Args[1]); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "freeport: N must be a positive number, not %q\n", os.Args[1])
			os.Exit(2)
		}
	}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		defer ln.Close()
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	}
}
