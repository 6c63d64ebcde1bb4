package users

import (
	"database/sql"
	"fmt"
	"strings"
)

// FindByID returns the user's name.
func FindByID(db *sql.DB, id int) (string, error) {
	var name string
	err := db.QueryRow("SELECT name FROM users WHERE id = $1", id).Scan(&name)
	return name, err
}

// CleanName trims and lower-cases a name.
func CleanName(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}

// FindByName returns the user's id.
func FindByName(db *sql.DB, name string) (int, error) {
	var id int
	q := fmt.Sprintf("SELECT id FROM users WHERE name = '%s'", CleanName(name))
	err := db.QueryRow(q).Scan(&id)
	return id, err
}
