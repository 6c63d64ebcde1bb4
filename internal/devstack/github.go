package devstack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The seeded world of quavon-dev-github.
const (
	DemoOrg       = "quavon-demo"
	DemoRepo      = "demo-app"
	DemoAdmin     = "demo-admin"
	ReviewAppSlug = "quavon-dev"
	FixerAppSlug  = "quavon-dev-fixer"
	FixLabel      = "quavon:fix"
)

// GitHubState is what quavon-dev-github writes to state.json in its state
// directory once it serves: everything the other processes need to talk to
// it, secrets by file name (each 0600 in the same directory).
type GitHubState struct {
	URL        string   `json:"url"`         // REST root without the trailing slash; GraphQL at URL+"/graphql"
	ControlURL string   `json:"control_url"` // the scenario endpoints (POST, bearer token)
	Repo       string   `json:"repo"`        // owner/name of the demo repository
	AdminID    int64    `json:"admin_id"`    // DemoAdmin's GitHub user id (the dashboard identity)
	Review     AppState `json:"review"`
	Fixer      AppState `json:"fixer"`
	// ModelURL is the Anthropic API root of the emulated model (llmfake
	// with the demo's script); its key is SecretFile(dir, "model", "api-key").
	ModelURL string `json:"model_url"`
	Model    string `json:"model"`
}

// AppState is one emulated GitHub App.
type AppState struct {
	ID             int64  `json:"id"`
	Slug           string `json:"slug"`
	ClientID       string `json:"client_id"`
	InstallationID int64  `json:"installation_id"`
}

// Files of the state directory.
const (
	StateFile        = "state.json"
	ControlTokenFile = "control-token"
)

// SecretFile names an app's secret in the state directory: kind is
// "review" or "fixer", what "key.pem", "webhook-secret" or "client-secret".
func SecretFile(dir, kind, what string) string { return filepath.Join(dir, kind+"-"+what) }

// ReadState reads the state.json quavon-dev-github wrote into dir.
func ReadState(dir string) (GitHubState, error) {
	var st GitHubState
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", StateFile, err)
	}
	return st, nil
}

// Pull is a pull request as the emulator's GET /pulls shows it: Files are
// the paths its head changes against its base branch, with the new content
// (nil: deleted).
type Pull struct {
	Number  int                `json:"number"`
	Title   string             `json:"title"`
	Body    string             `json:"body"`
	Author  string             `json:"author"`
	State   string             `json:"state"`
	Draft   bool               `json:"draft"`
	Head    string             `json:"head"`
	Base    string             `json:"base"`
	HeadSHA string             `json:"head_sha"`
	Files   map[string]*string `json:"files"`
}
