package github

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// ETag cache defaults: bounded in entries, per entry and in total, so a
// stream of large responses cannot grow it without limit.
const (
	DefaultETagEntries    = 1024
	DefaultETagEntryBytes = 1 << 20
	DefaultETagTotalBytes = 32 << 20
)

// ETagCache is an in-memory LRU of GET responses that carried an ETag. It
// is never persisted. Entries are keyed by URL, Accept and a hash of the
// Authorization header, so a cached body is only ever served to a request
// made with the same credentials.
type ETagCache struct {
	mu         sync.Mutex
	entries    map[string]*list.Element
	order      *list.List // front = most recently used
	maxEntries int
	maxEntry   int
	maxTotal   int
	total      int
}

type etagEntry struct {
	key    string
	etag   string
	status string
	header http.Header
	body   []byte
}

// NewETagCache returns a cache bounded by the given sizes; a value ≤ 0
// takes the default.
func NewETagCache(maxEntries, maxEntryBytes, maxTotalBytes int) *ETagCache {
	if maxEntries <= 0 {
		maxEntries = DefaultETagEntries
	}
	if maxEntryBytes <= 0 {
		maxEntryBytes = DefaultETagEntryBytes
	}
	if maxTotalBytes <= 0 {
		maxTotalBytes = DefaultETagTotalBytes
	}
	return &ETagCache{
		entries: map[string]*list.Element{}, order: list.New(),
		maxEntries: maxEntries, maxEntry: maxEntryBytes, maxTotal: maxTotalBytes,
	}
}

// Len reports the number of cached responses.
func (c *ETagCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func etagKey(req *http.Request) string {
	auth := sha256.Sum256([]byte(req.Header.Get("Authorization")))
	return req.URL.String() + "\x00" + req.Header.Get("Accept") + "\x00" + hex.EncodeToString(auth[:])
}

func (c *ETagCache) get(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*etagEntry)
}

// store reads resp's body (up to the entry cap), caches it and returns an
// equivalent response. A body over the cap is streamed through uncached.
func (c *ETagCache) store(key string, resp *http.Response) (*http.Response, error) {
	head, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxEntry)+1))
	if err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	if len(head) > c.maxEntry {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
		return resp, nil
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(head))
	e := &etagEntry{key: key, etag: resp.Header.Get("ETag"), status: resp.Status, header: resp.Header.Clone(), body: head}

	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.remove(old)
	}
	c.entries[key] = c.order.PushFront(e)
	c.total += len(head)
	for c.order.Len() > c.maxEntries || c.total > c.maxTotal {
		c.remove(c.order.Back())
	}
	return resp, nil
}

func (c *ETagCache) remove(el *list.Element) {
	e := el.Value.(*etagEntry)
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.total -= len(e.body)
}

// response rebuilds the cached 200 for a 304, taking GitHub's fresh
// rate-limit headers from the 304 itself.
func (e *etagEntry) response(req *http.Request, fresh http.Header) *http.Response {
	h := e.header.Clone()
	for k, v := range fresh {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Ratelimit-") {
			h[k] = v
		}
	}
	h.Set("X-From-Cache", "1")
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	return &http.Response{
		Status: e.status, StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)), Request: req,
	}
}
