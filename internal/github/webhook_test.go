package github

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVerifyWebhookSignatureGitHubVector(t *testing.T) {
	t.Parallel()
	// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
	secret := []byte("It's a Secret to Everybody")
	body := []byte("Hello, World!")
	const header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if !VerifyWebhookSignature(secret, body, header) {
		t.Fatal("GitHub's published vector does not verify")
	}
	refused := map[string]string{
		"other body":      "",
		"sha1 form":       "sha1=757107ea0eb2509fc211221cce984b8a37570b6d",
		"no prefix":       strings.TrimPrefix(header, "sha256="),
		"upper prefix":    "SHA256=" + strings.TrimPrefix(header, "sha256="),
		"truncated":       header[:len(header)-2],
		"extended":        header + "00",
		"space":           header + " ",
		"not hex":         "sha256=" + strings.Repeat("zz", 32),
		"flipped bit":     header[:len(header)-1] + "6",
		"empty":           "",
		"prefix only":     "sha256=",
		"two signatures":  header + "," + header,
		"leading space":   " " + header,
		"sha512 prefixed": "sha512=" + strings.TrimPrefix(header, "sha256="),
	}
	for name, h := range refused {
		b := body
		if name == "other body" {
			b, h = []byte("Hello, World?"), header
		}
		if VerifyWebhookSignature(secret, b, h) {
			t.Errorf("%s: accepted %q", name, h)
		}
	}
	if VerifyWebhookSignature(nil, body, header) || VerifyWebhookSignature([]byte{}, body, header) {
		t.Error("empty secret verified")
	}
	// Upper-case hex is the same MAC; GitHub sends lower case, both decode.
	if !VerifyWebhookSignature(secret, body, "sha256="+strings.ToUpper(strings.TrimPrefix(header, "sha256="))) {
		t.Error("upper-case hex refused")
	}
}

func sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func readWebhook(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseWebhook(t *testing.T) {
	t.Parallel()
	org := Account{ID: 501, Login: "octo-org", Type: "Organization"}
	ada := Account{ID: 77, Login: "ada", Type: "User"}
	cases := []struct {
		event, file string
		want        any
	}{
		{"installation", "installation_created.json", &InstallationEvent{
			Action: "created", InstallationID: 1001, Account: org,
			Permissions:         Permissions{"contents": "write", "metadata": "read", "pull_requests": "write"},
			RepositorySelection: "selected",
			Repositories:        []RepositoryRef{{ID: 9001, FullName: "octo-org/app", Private: true}, {ID: 9002, FullName: "octo-org/lib"}},
			Sender:              ada,
		}},
		{"installation", "installation_suspend.json", &InstallationEvent{
			Action: "suspend", InstallationID: 1001, Account: org, Permissions: Permissions{"metadata": "read"},
			RepositorySelection: "all", Repositories: []RepositoryRef{}, Sender: ada,
		}},
		{"installation_repositories", "installation_repositories_added.json", &InstallationRepositoriesEvent{
			Action: "added", InstallationID: 1001, Account: org, RepositorySelection: "selected",
			Added: []RepositoryRef{{ID: 9003, FullName: "octo-org/new"}}, Removed: []RepositoryRef{}, Sender: ada,
		}},
		{"repository", "repository_renamed.json", &RepositoryEvent{
			Action: "renamed", InstallationID: 1001, Repository: RepositoryRef{ID: 9001, FullName: "octo-org/app", Private: true},
			Owner: org, Visibility: "private", FromName: "old-name", Sender: ada,
		}},
		{"repository", "repository_transferred.json", &RepositoryEvent{
			Action: "transferred", InstallationID: 1001, Repository: RepositoryRef{ID: 9001, FullName: "octo-org/app"},
			Owner: org, Visibility: "public", FromOwner: "ada", Sender: ada,
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			got, err := ParseWebhook(c.event, readWebhook(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseWebhookActions(t *testing.T) {
	t.Parallel()
	inst := `"installation":{"id":1,"account":{"login":"o","id":2,"type":"User"}}`
	repo := `"repository":{"id":3,"full_name":"o/r","owner":{"login":"o","id":2}}`
	for _, a := range []string{"created", "deleted", "suspend", "unsuspend", "new_permissions_accepted"} {
		if _, err := ParseWebhook("installation", []byte(`{"action":"`+a+`",`+inst+`}`)); err != nil {
			t.Errorf("installation %s: %v", a, err)
		}
	}
	for _, a := range []string{"added", "removed"} {
		body := `{"action":"` + a + `",` + inst + `,"repositories_` + a + `":[{"id":3,"full_name":"o/r"}]}`
		if _, err := ParseWebhook("installation_repositories", []byte(body)); err != nil {
			t.Errorf("installation_repositories %s: %v", a, err)
		}
	}
	for _, a := range []string{"privatized", "publicized", "deleted", "archived", "unarchived"} {
		if _, err := ParseWebhook("repository", []byte(`{"action":"`+a+`",`+repo+`,"installation":{"id":1}}`)); err != nil {
			t.Errorf("repository %s: %v", a, err)
		}
	}
}

func TestParseWebhookRefuses(t *testing.T) {
	t.Parallel()
	inst := `"installation":{"id":1,"account":{"login":"o","id":2,"type":"User"}}`
	cases := []struct {
		name, event, body string
		want              error
	}{
		{"unknown event", "push", `{}`, ErrUnsupportedEvent},
		{"unknown action", "installation", `{"action":"edited",` + inst + `}`, ErrUnsupportedEvent},
		{"missing action", "installation", `{` + inst + `}`, ErrUnsupportedEvent},
		{"not json", "installation", `{"action":`, ErrInvalidPayload},
		{"trailing data", "installation", `{"action":"created",` + inst + `} {}`, ErrInvalidPayload},
		{"array", "installation", `[]`, ErrInvalidPayload},
		{"no installation id", "installation", `{"action":"created","installation":{"account":{"login":"o","id":2}}}`, ErrInvalidPayload},
		{"no account", "installation", `{"action":"deleted","installation":{"id":1}}`, ErrInvalidPayload},
		{"bad repo name", "installation", `{"action":"created",` + inst + `,"repositories":[{"id":3,"full_name":"o/../x"}]}`, ErrInvalidPayload},
		{"repo without id", "installation", `{"action":"created",` + inst + `,"repositories":[{"full_name":"o/r"}]}`, ErrInvalidPayload},
		{"added nothing", "installation_repositories", `{"action":"added",` + inst + `}`, ErrInvalidPayload},
		{"wrong type", "installation", `{"action":"created","installation":{"id":"1"}}`, ErrInvalidPayload},
		{"rename without from", "repository", `{"action":"renamed","repository":{"id":3,"full_name":"o/r","owner":{"login":"o","id":2}},"installation":{"id":1}}`, ErrInvalidPayload},
		{"transfer without from", "repository", `{"action":"transferred","repository":{"id":3,"full_name":"o/r","owner":{"login":"o","id":2}},"installation":{"id":1}}`, ErrInvalidPayload},
		{"repository missing", "repository", `{"action":"deleted","installation":{"id":1}}`, ErrInvalidPayload},
		{"no installation", "repository", `{"action":"deleted","repository":{"id":3,"full_name":"o/r","owner":{"login":"o","id":2}}}`, ErrInvalidPayload},
	}
	for _, c := range cases {
		if _, err := ParseWebhook(c.event, []byte(c.body)); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestParseWebhookSizeCap(t *testing.T) {
	t.Parallel()
	// Valid JSON padded with whitespace past the cap: refused unparsed.
	body := append([]byte(`{"action":"deleted","installation":{"id":1,"account":{"login":"o","id":2}}}`), bytes.Repeat([]byte(" "), MaxWebhookPayload)...)
	if _, err := ParseWebhook("installation", body); !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if _, err := ParseWebhook("installation", body[:MaxWebhookPayload]); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
}

func FuzzParseWebhook(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "webhooks"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "webhooks", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(eventOfFile(e.Name()), b)
	}
	f.Add("repository", []byte(`{"action":"renamed","changes":null}`))
	f.Add("installation", []byte(`{"action":"created","installation":{"id":-1}}`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		got, err := ParseWebhook(event, body)
		if err != nil {
			if got != nil {
				t.Fatal("value with error")
			}
			if !errors.Is(err, ErrUnsupportedEvent) && !errors.Is(err, ErrInvalidPayload) && !errors.Is(err, ErrPayloadTooLarge) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// A parsed payload always names a valid installation and valid
		// repositories, and has the type of its event; repository events
		// hold only what GitHub's limits allow.
		var repos []RepositoryRef
		switch ev := got.(type) {
		case *PullRequestEvent:
			p := ev.PullRequest
			if event != "pull_request" || ev.InstallationID <= 0 || ev.Number <= 0 || p.Number != ev.Number || !ValidCommit(p.HeadSHA) ||
				!ValidCommit(p.BaseSHA) || p.HeadRef == "" || ev.Sender.ID <= 0 || utf8.RuneCountInString(p.Body) > MaxBodyChars ||
				utf8.RuneCountInString(p.Title) > MaxTitleChars || ev.Action == "synchronize" && !ValidCommit(ev.After) {
				t.Fatalf("%s: %+v", event, ev)
			}
			repos = []RepositoryRef{{ID: ev.Repository.ID, FullName: ev.Repository.FullName}}
		case *IssuesEvent:
			if event != "issues" || ev.InstallationID <= 0 || ev.Issue.Number <= 0 || ev.Sender.ID <= 0 ||
				utf8.RuneCountInString(ev.Issue.Body) > MaxBodyChars || len(ev.Issue.Labels) > MaxLabelsPerIssue ||
				ev.Action == "labeled" && ev.Label == "" || ev.Action == "transferred" && ev.NewNumber <= 0 {
				t.Fatalf("%s: %+v", event, ev)
			}
			repos = []RepositoryRef{{ID: ev.Repository.ID, FullName: ev.Repository.FullName}}
		case *IssueCommentEvent:
			if event != "issue_comment" || ev.InstallationID <= 0 || ev.Comment.ID <= 0 || ev.Issue.Number <= 0 ||
				utf8.RuneCountInString(ev.Comment.Body) > MaxBodyChars || ev.Sender.ID <= 0 {
				t.Fatalf("%s: %+v", event, ev)
			}
			repos = []RepositoryRef{{ID: ev.Repository.ID, FullName: ev.Repository.FullName}}
		case *InstallationEvent:
			if event != "installation" || ev.InstallationID <= 0 || ev.Account.ID <= 0 || ev.Account.Login == "" {
				t.Fatalf("%s: %+v", event, ev)
			}
			repos = ev.Repositories
		case *InstallationRepositoriesEvent:
			if event != "installation_repositories" || ev.InstallationID <= 0 || len(ev.Added)+len(ev.Removed) == 0 {
				t.Fatalf("%s: %+v", event, ev)
			}
			repos = append(ev.Added, ev.Removed...)
		case *RepositoryEvent:
			if event != "repository" || ev.InstallationID <= 0 {
				t.Fatalf("%s: %+v", event, ev)
			}
			repos = []RepositoryRef{ev.Repository}
		default:
			t.Fatalf("type %T", got)
		}
		for _, r := range repos {
			if r.ID <= 0 {
				t.Fatalf("repository id %d", r.ID)
			}
			if _, _, err := SplitRepo(r.FullName); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// eventOfFile is the event a testdata/webhooks file holds: the longest
// event name its name starts with.
func eventOfFile(name string) string {
	best := ""
	for event := range webhookActions {
		if strings.HasPrefix(name, event+"_") && len(event) > len(best) {
			best = event
		}
	}
	return best
}

// Every file in testdata/webhooks parses (they are the fuzzer's seeds).
func TestWebhookTestdataParses(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("testdata", "webhooks"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := ParseWebhook(eventOfFile(e.Name()), readWebhook(t, e.Name())); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
}

func TestSignHelperMatchesVerifier(t *testing.T) {
	t.Parallel()
	body := readWebhook(t, "installation_created.json")
	if !VerifyWebhookSignature([]byte("s3cret"), body, sign([]byte("s3cret"), body)) {
		t.Fatal("round trip")
	}
}
