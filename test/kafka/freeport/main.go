// Command freeport prints a TCP port on 127.0.0.1 that was free a moment
// ago, for test/kafka/kafka.sh's callers (just test-kafka, .ci/run).
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeport:", err)
		os.Exit(1)
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
}
