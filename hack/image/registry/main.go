// Command registry serves an in-memory OCI registry on a loopback port (for
// tests: `make release`'s push goes there). It prints its address, then serves
// until killed.
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Addr().String())
	os.Stdout.Sync()
	log.Fatal(http.Serve(l, registry.New(registry.Logger(log.New(os.Stderr, "registry: ", 0)))))
}
