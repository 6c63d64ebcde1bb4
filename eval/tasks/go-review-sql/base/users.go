package users

import "database/sql"

// FindByID returns the user's name.
func FindByID(db *sql.DB, id int) (string, error) {
	var name string
	err := db.QueryRow("SELECT name FROM users WHERE id = $1", id).Scan(&name)
	return name, err
}
