// Command fetch is "repository code" for the egress tests: it GETs a URL
// through the proxy named in the environment (HTTPS_PROXY, HTTP_PROXY),
// trusting only the CA in the file given, and prints one line:
// "FETCH OK <url> <body>" or "FETCH FAIL <url> <error>".
// Build it with CGO_ENABLED=0.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Println("usage: fetch URL CA.pem")
		os.Exit(2)
	}
	url, caFile := os.Args[1], os.Args[2]
	pem, err := os.ReadFile(caFile)
	if err != nil {
		fmt.Println("FETCH FAIL", url, err)
		return
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy:           http.ProxyFromEnvironment,
			TLSClientConfig: &tls.Config{RootCAs: pool},
		},
	}
	resp, err := client.Get(url)
	if err != nil {
		fmt.Println("FETCH FAIL", url, strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		fmt.Println("FETCH FAIL", url, resp.Status)
		return
	}
	fmt.Println("FETCH OK", url, strings.TrimSpace(string(body)))
}
