package githubfake

// Test-only access for the external test package.

// RoutePattern is one served route.
type RoutePattern struct{ Method, Pattern string }

// RoutePatterns lists the REST routes s serves.
func RoutePatterns(s *Server) []RoutePattern {
	var out []RoutePattern
	for _, r := range s.routes {
		if r.op != "" {
			out = append(out, RoutePattern{r.method, r.pattern})
		}
	}
	return out
}

// CorruptAnswers makes s rewrite every answer body with f before it is
// checked and sent, to show that the check catches a wrong answer.
func CorruptAnswers(s *Server, f func([]byte) []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt = f
}
