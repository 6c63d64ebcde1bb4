package githubfake

import (
	"slices"
	"strings"
	"sync"
)

// Automatic delivery: after AutoDeliver(app), the emulator's own state
// changes send the webhooks GitHub would send to that app, built by the
// same payload builders the fidelity suite validates, signed and posted to
// the app's webhook URL. A state change made by a test helper (AddIssue,
// Commit, MergePullRequest, ...) delivers before the helper returns, so a
// test can act and then assert on the receiver; one made through the REST
// or GraphQL API delivers after the answer is sent, as GitHub does
// (WaitDeliveries waits for those).
//
// An app receives an event when one of its installations covers the
// repository, is not suspended, and subscribes to the event (installation
// events reach it always). What is sent:
//
//	issues            opened (then labeled for each label set at creation,
//	                  as GitHub does), edited, labeled, unlabeled, closed,
//	                  reopened, transferred, deleted
//	issue_comment     created, edited, deleted
//	pull_request      opened, edited, labeled, unlabeled, closed (merged or
//	                  not), reopened, ready_for_review, converted_to_draft,
//	                  synchronize (a push to the head branch)
//	repository        renamed, transferred, privatized, publicized,
//	                  archived, unarchived, deleted
//	installation      suspend, unsuspend
//	installation_repositories  added, removed

type outgoing struct {
	app     *App
	event   string
	payload map[string]any
}

type autoState struct {
	apps    map[int64]bool
	outbox  []outgoing
	done    []Delivery
	wg      sync.WaitGroup
	sending sync.Mutex // keeps deliveries in order
}

// AutoDeliver makes the emulator deliver app's webhooks from its own state
// changes from now on. The app needs a webhook URL (SetWebhookURL).
func (s *Server) AutoDeliver(app *App) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auto.apps[app.ID] = true
}

// Deliveries returns the automatic deliveries made so far, oldest first;
// a delivery that could not be posted has StatusCode 0 and Err set.
func (s *Server) Deliveries() []Delivery {
	s.WaitDeliveries()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auto.done)
}

// WaitDeliveries waits until the deliveries of API writes have been sent.
func (s *Server) WaitDeliveries() { s.auto.wg.Wait() }

// emit queues event for every app that gets it; runs with s.mu held. The
// payload is built now, from the state just changed.
func (s *Server) emit(r *Repo, event string, build func(in *Installation) map[string]any) {
	if len(s.auto.apps) == 0 {
		return
	}
	for _, in := range s.sortedInstallations() {
		if !s.auto.apps[in.App.ID] || in.Suspended || !in.covers(r) || !slices.Contains(in.Events, event) {
			continue
		}
		s.auto.outbox = append(s.auto.outbox, outgoing{app: in.App, event: event, payload: build(in)})
	}
}

// emitInstallation queues an installation-level event to in's app.
func (s *Server) emitInstallation(in *Installation, event string, payload func() map[string]any) {
	if s.auto.apps[in.App.ID] {
		s.auto.outbox = append(s.auto.outbox, outgoing{app: in.App, event: event, payload: payload()})
	}
}

// flush delivers what state changes queued; called by helpers after they
// release s.mu (defer s.flush() before the lock's defer).
func (s *Server) flush() {
	s.mu.Lock()
	out := s.auto.outbox
	s.auto.outbox = nil
	s.mu.Unlock()
	s.auto.sending.Lock()
	defer s.auto.sending.Unlock()
	for _, o := range out {
		d, err := s.Deliver(o.app, o.event, o.payload)
		if err != nil {
			d.Err = err
		}
		s.mu.Lock()
		s.auto.done = append(s.auto.done, d)
		s.mu.Unlock()
	}
}

// issueSnapshot is what an edit can change, to tell which events it makes.
type issueSnapshot struct {
	title, body, state string
	labels             []string
	draft              bool
}

func snapshotOf(in *Issue) issueSnapshot {
	sn := issueSnapshot{title: in.Title, body: in.Body, state: in.State, labels: slices.Clone(in.Labels)}
	if in.PullRequest != nil {
		sn.draft = in.PullRequest.Draft
	}
	return sn
}

// issueChanged queues the events of the change from before to now.
func (r *Repo) issueChanged(in *Issue, before issueSnapshot, sender string) {
	s := r.s
	event := "issues"
	build := func(action, label string) func(*Installation) map[string]any {
		return func(inst *Installation) map[string]any {
			if in.PullRequest != nil {
				return s.pullRequestEvent(action, inst, r, in.Number, sender, label)
			}
			return s.issuesEvent(action, inst, r, in.Number, sender, label)
		}
	}
	if in.PullRequest != nil {
		event = "pull_request"
	}
	if before.title != in.Title || before.body != in.Body {
		s.emit(r, event, build("edited", ""))
	}
	for _, l := range in.Labels {
		if !slices.ContainsFunc(before.labels, func(x string) bool { return strings.EqualFold(x, l) }) {
			s.emit(r, event, build("labeled", l))
		}
	}
	for _, l := range before.labels {
		if !slices.ContainsFunc(in.Labels, func(x string) bool { return strings.EqualFold(x, l) }) {
			s.emit(r, event, build("unlabeled", l))
		}
	}
	if in.PullRequest != nil && before.draft != in.PullRequest.Draft {
		action := "ready_for_review"
		if in.PullRequest.Draft {
			action = "converted_to_draft"
		}
		s.emit(r, event, build(action, ""))
	}
	if before.state != in.State {
		action := "closed"
		if in.State == "open" {
			action = "reopened"
		}
		s.emit(r, event, build(action, ""))
	}
}

// issueOpened queues opened and a labeled per label set at creation.
func (r *Repo) issueOpened(in *Issue, sender string) {
	s := r.s
	if in.PullRequest != nil {
		s.emit(r, "pull_request", func(inst *Installation) map[string]any {
			return s.pullRequestEvent("opened", inst, r, in.Number, sender, "")
		})
		return
	}
	s.emit(r, "issues", func(inst *Installation) map[string]any {
		return s.issuesEvent("opened", inst, r, in.Number, sender, "")
	})
	for _, l := range in.Labels {
		s.emit(r, "issues", func(inst *Installation) map[string]any {
			return s.issuesEvent("labeled", inst, r, in.Number, sender, l)
		})
	}
}

// afterPush queues synchronize for the open pull requests whose head is
// branch of r, in r and in the repositories r is a fork of.
func (r *Repo) afterPush(branch, sender string) {
	s := r.s
	for _, base := range s.sortedRepos() {
		for _, in := range base.sortedIssues() {
			pr := in.PullRequest
			if pr == nil || in.State != "open" || pr.Head != branch || base.prHeadRepo(pr) != r {
				continue
			}
			before := pr.HeadSHA
			if base.prHeadSHA(pr) == before {
				continue
			}
			base.syncPullRef(in)
			s.emit(base, "pull_request", func(inst *Installation) map[string]any {
				return s.pullRequestEvent("synchronize", inst, base, in.Number, sender, "")
			})
		}
	}
}

func (s *Server) emitRepo(r *Repo, action, sender string) {
	s.emit(r, "repository", func(inst *Installation) map[string]any {
		return s.repositoryEvent(action, inst, r, sender, nil)
	})
}
