// Command floorproxy is the lower bound of an impersonating proxy's
// latency for the end-to-end tests: a plain httputil.ReverseProxy over TLS
// that verifies nothing and sets a fixed credential and identity on every
// request. It runs as its own process, like the proxy it is compared with.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	upstream := flag.String("upstream", "", "API server URL")
	caFile := flag.String("ca", "", "CA of the API server")
	certFile := flag.String("cert", "", "serving certificate")
	keyFile := flag.String("key", "", "serving key")
	token := flag.String("token", "", "the proxy's bearer token")
	user := flag.String("user", "", "Impersonate-User")
	group := flag.String("group", "", "Impersonate-Group")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	tr.ForceAttemptHTTP2 = true
	tr.MaxIdleConnsPerHost = 64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Header.Set("Authorization", "Bearer "+*token)
			r.Out.Header.Set("Impersonate-User", *user)
			r.Out.Header.Set("Impersonate-Group", *group)
		},
		Transport:     tr,
		FlushInterval: -1,
	}
	srv := &http.Server{Addr: *listen, Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServeTLS(*certFile, *keyFile))
}
