package main

import (
	"crypto/md5"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
)

func main() {
	cmd := exec.Command("sh", "-c", os.Args[1])
	_ = cmd.Run()
	fmt.Printf("%x\n", md5.Sum([]byte(os.Args[2])))
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true,
	}}
	_ = tr
	os.WriteFile("x", nil, 0o777)
}
