package github

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// ResponseError turns a non-success response into an error carrying the
// status sentinel and GitHub's message (bounded; never request headers).
func ResponseError(resp *http.Response) error {
	var msg struct {
		Message string `json:"message"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = json.Unmarshal(raw, &msg)
	m := msg.Message
	if len(m) > 200 {
		m = m[:200]
	}
	err := fmt.Errorf("status %d: %q", resp.StatusCode, m)
	if s := statusSentinel(resp.StatusCode); s != nil {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

var (
	ownerPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// SplitRepo parses "owner/name", refusing anything that is not a plausible
// GitHub owner and repository name (so no value can inject path segments
// into an API URL).
func SplitRepo(full string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(full, "/")
	if !ok || !ownerPattern.MatchString(owner) || !namePattern.MatchString(name) || name == "." || name == ".." {
		return "", "", fmt.Errorf("invalid repository %q (want owner/name)", full)
	}
	return owner, name, nil
}
