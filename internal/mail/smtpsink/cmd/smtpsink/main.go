// Command smtpsink is a tiny SMTP server for latchkey's tests: it stores
// every mail it accepts in a folder. It prints "listening ADDR" once it
// accepts connections.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/latchkey/latchkey/internal/mail/smtpsink"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	dir := flag.String("dir", "", "folder for the received mails")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "smtpsink: -dir is required")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "smtpsink:", err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	err = smtpsink.Serve(ln, *dir) // returns only when the listener fails
	fmt.Fprintln(os.Stderr, "smtpsink:", err)
	os.Exit(1)
}
