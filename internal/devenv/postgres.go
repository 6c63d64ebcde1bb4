package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// PostgresBin is where Debian's PostgreSQL 15 binaries are.
const PostgresBin = "/usr/lib/postgresql/15/bin"

// Postgres is a throwaway cluster on 127.0.0.1 with a superuser
// quavon_admin (random password) and a database quavon_test.
type Postgres struct {
	// URL connects as quavon_admin to quavon_test.
	URL  string
	Port int
	data string
	run  []string // the command prefix (runuser as postgres when root)
}

// StartPostgres initialises a cluster under dir and starts it. Durability
// is off (fsync, synchronous_commit, full_page_writes): the cluster is
// thrown away. As root it runs as the postgres OS user, which it creates
// when missing (PostgreSQL refuses to run as root).
func StartPostgres(ctx context.Context, dir string) (*Postgres, error) {
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(PostgresBin, b)); err != nil {
			return nil, fmt.Errorf("postgres: %s is missing (apt-get install postgresql-15): %w", filepath.Join(PostgresBin, b), err)
		}
	}
	p := &Postgres{data: filepath.Join(dir, "data")}
	runDir := filepath.Join(dir, "run")
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if err := ensurePostgresUser(ctx); err != nil {
			return nil, err
		}
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{dir, p.data, runDir} {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
		// The postgres user must be able to reach dir.
		for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
				os.Chmod(d, fi.Mode().Perm()|0o011)
			}
		}
		p.run = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := p.cmd(ctx, "initdb", "-D", p.data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	log := filepath.Join(dir, "postgres.log")
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if p.Port, err = FreePort(); err != nil {
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", p.Port, runDir)
		out, e := p.cmd(ctx, "pg_ctl", "-D", p.data, "-l", log, "-w", "-t", strconv.Itoa(int(Deadline.Seconds())), "-o", opts, "start").CombinedOutput()
		if e == nil {
			err = nil
			break
		}
		err = fmt.Errorf("postgres did not start: %v\n%s\n%s", e, out, tail(log, 20))
	}
	if err != nil {
		return nil, err
	}
	password := RandomPassword()
	psql := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", runDir, "-p", strconv.Itoa(p.Port), "-U", "postgres", "-d", "postgres",
		"-c", "CREATE ROLE quavon_admin LOGIN SUPERUSER PASSWORD '" + password + "'",
		"-c", "CREATE DATABASE quavon_test OWNER quavon_admin"}
	if out, err := exec.CommandContext(ctx, "psql", psql...).CombinedOutput(); err != nil {
		p.Stop()
		return nil, fmt.Errorf("creating quavon_admin and quavon_test: %v\n%s", err, out)
	}
	p.URL = fmt.Sprintf("postgres://quavon_admin:%s@127.0.0.1:%d/quavon_test?sslmode=disable", password, p.Port)
	// Check the URL as the tests use it: over TCP, with the password.
	if out, err := output(ctx, "psql", "-X", "-At", p.URL, "-c", "SELECT current_user"); err != nil || out != "quavon_admin" {
		p.Stop()
		return nil, fmt.Errorf("cannot connect as quavon_admin: %v %s", err, out)
	}
	return p, nil
}

func (p *Postgres) cmd(ctx context.Context, bin string, args ...string) *exec.Cmd {
	argv := append(append([]string(nil), p.run...), filepath.Join(PostgresBin, bin))
	argv = append(argv, args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// Stop stops the cluster (fast shutdown).
func (p *Postgres) Stop() error {
	out, err := p.cmd(context.Background(), "pg_ctl", "-D", p.data, "-m", "fast", "-w", "-t", "30", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v %s", err, out)
	}
	return nil
}

func ensurePostgresUser(ctx context.Context) error {
	if _, err := user.Lookup("postgres"); err == nil {
		return nil
	} else if !errors.As(err, new(user.UnknownUserError)) {
		return err
	}
	group := []string{"--user-group"}
	if _, err := user.LookupGroup("postgres"); err == nil {
		group = []string{"--gid", "postgres"}
	}
	args := append([]string{"--system"}, group...)
	args = append(args, "--home-dir", "/var/lib/postgresql", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres")
	if out, err := exec.CommandContext(ctx, "useradd", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("useradd postgres: %v %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
