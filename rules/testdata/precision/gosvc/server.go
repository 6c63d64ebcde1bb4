// Package main is a small net/http service written the safe way (Quavon
// precision corpus).
package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io"
	"log"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

var (
	db        *sql.DB
	pageTmpl  = template.Must(template.ParseFiles("templates/page.html"))
	filesRoot = "/srv/files"
	sortCols  = map[string]string{"new": "created_at DESC", "name": "name"}
	targets   = map[string]string{"home": "/", "docs": "/docs"}
	allowed   = map[string]bool{"images.example.com": true}
)

func hello(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	fmt.Fprintf(w, "<p>Hello, %s</p>", html.EscapeString(name))
}

func greet(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "Hello, %s", r.URL.Query().Get("name"))
}

func page(w http.ResponseWriter, r *http.Request) {
	if err := pageTmpl.Execute(w, map[string]string{"Query": r.FormValue("q")}); err != nil {
		http.Error(w, "render failed", http.StatusInternalServerError)
	}
}

func echo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "%s", r.FormValue("msg"))
}

func api(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"q": r.FormValue("q")})
}

func item(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	var name string
	if err := db.QueryRowContext(r.Context(), "SELECT name FROM items WHERE id = $1", id).Scan(&name); err != nil {
		http.NotFound(w, r)
		return
	}
	fmt.Fprintf(w, "<p>%s</p>", html.EscapeString(name))
}

func list(w http.ResponseWriter, r *http.Request) {
	order, ok := sortCols[r.URL.Query().Get("sort")]
	if !ok {
		order = "created_at DESC"
	}
	rows, err := db.QueryContext(r.Context(), "SELECT id, name FROM items ORDER BY "+order)
	if err != nil {
		http.Error(w, "query failed", http.StatusInternalServerError)
		return
	}
	defer rows.Close()
}

func download(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("f")
	if !filepath.IsLocal(name) {
		http.NotFound(w, r)
		return
	}
	http.ServeFile(w, r, filepath.Join(filesRoot, name))
}

func report(w http.ResponseWriter, r *http.Request) {
	root, err := os.OpenRoot(filesRoot)
	if err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	defer root.Close()
	f, err := root.Open(r.FormValue("p"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	io.Copy(w, f)
}

func avatar(w http.ResponseWriter, r *http.Request) {
	name := filepath.Base(r.URL.Query().Get("user"))
	data, err := os.ReadFile(filepath.Join(filesRoot, "avatars", name+".png"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Write(data)
}

func proxy(w http.ResponseWriter, r *http.Request) {
	u, err := url.Parse(r.FormValue("url"))
	if err != nil || !allowed[u.Hostname()] {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	resp, err := http.Get(u.String())
	if err != nil {
		http.Error(w, "upstream failed", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	io.Copy(w, resp.Body)
}

func profile(w http.ResponseWriter, r *http.Request) {
	resp, err := http.Get("https://api.github.com/users/" + url.PathEscape(r.FormValue("user")))
	if err != nil {
		http.Error(w, "upstream failed", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	io.Copy(w, resp.Body)
}

func goTo(w http.ResponseWriter, r *http.Request) {
	t, ok := targets[r.URL.Query().Get("to")]
	if !ok {
		t = "/"
	}
	http.Redirect(w, r, t, http.StatusFound)
}

func toHTTPS(w http.ResponseWriter, r *http.Request) {
	target := "https://" + r.Host + r.URL.RequestURI()
	http.Redirect(w, r, target, http.StatusMovedPermanently)
}

func login(w http.ResponseWriter, r *http.Request) {
	token, err := authenticate(r.Context(), r.PostFormValue("user"), r.PostFormValue("password"))
	if err != nil {
		http.Error(w, "invalid credentials", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "session", Value: token, Path: "/", Secure: true,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 3600})
	http.Redirect(w, r, "/users/"+r.PostFormValue("user"), http.StatusSeeOther)
}

func logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "", Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func transfer(w http.ResponseWriter, r *http.Request) {
	amount, err := strconv.ParseFloat(r.PostFormValue("amount"), 64)
	if err != nil || math.IsNaN(amount) || math.IsInf(amount, 0) || amount <= 0 {
		http.Error(w, "bad amount", http.StatusBadRequest)
		return
	}
	if err := move(r.Context(), r.PostFormValue("to"), amount); err != nil {
		http.Error(w, "transfer failed", http.StatusInternalServerError)
	}
}

func clone(w http.ResponseWriter, r *http.Request) {
	repo := r.PostFormValue("url")
	if !strings.HasPrefix(repo, "https://") {
		http.Error(w, "https only", http.StatusBadRequest)
		return
	}
	cmd := exec.CommandContext(r.Context(), "git", "clone", "--", repo, filepath.Join(os.TempDir(), "repo"))
	if err := cmd.Run(); err != nil {
		http.Error(w, "clone failed", http.StatusInternalServerError)
	}
}

func main() {
	key := os.Getenv("SESSION_KEY")
	if len(key) < 32 {
		log.Fatal(errors.New("SESSION_KEY must be at least 32 bytes"))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", hello)
	mux.HandleFunc("GET /items/{id}", item)
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
