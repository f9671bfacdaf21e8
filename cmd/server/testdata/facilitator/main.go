// A facilitator's own service, for the tests of -allow-image: a small
// static HTTP server that hashes a block a number of times for each
// request, so that its latency depends on the CPU it is given.
package main

import (
	"crypto/sha256"
	"flag"
	"log"
	"net/http"
	"strconv"
)

func main() {
	listen := flag.String("listen", ":9090", "address to serve on")
	hashes := flag.Int("hashes", 5000, "SHA-256 rounds over 64 bytes per request")
	flag.Parse()
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		sum := sha256.Sum256(nil)
		for range *hashes {
			sum = sha256.Sum256(sum[:])
		}
		_, _ = w.Write([]byte(strconv.Itoa(int(sum[0])) + "\n"))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
