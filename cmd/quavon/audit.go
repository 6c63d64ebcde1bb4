package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/canonical"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
)

type auditOptions struct {
	env *env
	// verify or export
	action  string
	Tenants []string
	Anchor  string
	Out     string
}

const auditRoleHelp = `It connects with QUAVON_DATABASE_URL (and QUAVON_DATABASE_PASSWORD_FILE) as any
role that may read the log: a login role that is a member of quavon_auditor
(reads the audit log and lists tenants, nothing else: CREATE ROLE auditor LOGIN
IN ROLE quavon_auditor), of quavon_app, or the operator's. Without --tenant it
covers every tenant, and as a role that bypasses row-level security (the
operator's) also the logs of deleted tenants.`

var tenantRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func newAuditCmd(e *env, runF func(context.Context, *auditOptions) error) *cobra.Command {
	if runF == nil {
		runF = runAudit
	}
	cmd := &cobra.Command{Use: "audit", Short: "Verify and export the audit log's hash chains", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	check := func(o *auditOptions) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			for _, t := range o.Tenants {
				if !tenantRE.MatchString(t) {
					return usageError(cmd, fmt.Sprintf("--tenant %q: want a tenant uuid", t))
				}
			}
			return runF(cmd.Context(), o)
		}
	}
	v := &auditOptions{env: e, action: "verify"}
	verify := &cobra.Command{
		Use:   "verify [--tenant UUID]... [--anchor FILE]",
		Short: "Prove each tenant's audit chain intact, or name its first broken entry",
		Long: `Read each tenant's audit log in order and check its hash chain: no entry missing,
each entry's prev_hash the hash of the one before, each hash the hash of the
entry's content, the chain head the last entry. Prints one line per tenant:
"intact" with the head (its position and hash: keep them, or an export, outside
the database as an anchor), or "BROKEN" with the first broken entry and why.
Exits 1 when any chain is broken.

The chain alone cannot tell a log whose every later hash was recomputed (SHA-256
has no key) from an untouched one. --anchor FILE checks the log against an
earlier export (or any JSON Lines with tenant_id, seq and hash) kept elsewhere:
every anchored entry must still have the anchored hash, and every anchored
tenant must still be there.

` + auditRoleHelp,
		Args: noArgs,
		RunE: check(v),
	}
	verify.Flags().StringArrayVar(&v.Tenants, "tenant", nil, "verify only this tenant `uuid` (repeatable)")
	verify.Flags().StringVar(&v.Anchor, "anchor", "", "an earlier export `FILE` the log must still agree with")
	x := &auditOptions{env: e, action: "export"}
	export := &cobra.Command{
		Use:   "export [--tenant UUID]... [--out FILE]",
		Short: "Write the audit log as JSON Lines, with the chain's hashes",
		Long: `Write every entry, tenant by tenant in chain order, as one line of RFC 8785
canonical JSON: tenant_id, seq, at, actor_user_id (when a user acted), actor,
action, subject_type, subject_id, metadata, prev_hash and hash (entries from
before the chain have neither). Anyone can check an export without Quavon: drop
"hash" from a line, canonicalise it, and its hash is the hex SHA-256 of
"quavon-audit-entry:v1\n" followed by that; the next line's prev_hash is it.
The chains are verified on the way: a broken one is reported on stderr and the
command exits 1 after writing everything.

` + auditRoleHelp,
		Args: noArgs,
		RunE: check(x),
	}
	export.Flags().StringArrayVar(&x.Tenants, "tenant", nil, "export only this tenant `uuid` (repeatable)")
	export.Flags().StringVar(&x.Out, "out", "", "write to `FILE` (mode 0600, replaced only when complete) instead of stdout")
	cmd.AddCommand(verify, export)
	return cmd
}

func runAudit(ctx context.Context, o *auditOptions) error {
	var anchor *audit.Anchor
	if o.Anchor != "" {
		f, err := os.Open(o.Anchor)
		if err != nil {
			return err
		}
		anchor, err = audit.ReadAnchor(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", o.Anchor, err)
		}
	}
	cfg, err := config.LoadMigrate(o.env.environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	tenants := o.Tenants
	all := len(tenants) == 0
	if all {
		if tenants, err = audit.Tenants(ctx, db.Pool); err != nil {
			return err
		}
	}
	if o.action == "export" {
		return exportAudit(ctx, o, db, tenants)
	}
	broken := 0
	for _, t := range tenants {
		r, err := walkTenant(ctx, db, t, anchor, nil)
		if err != nil {
			return err
		}
		if !r.Intact() {
			broken++
			fmt.Fprintf(o.env.stdout, "BROKEN  %s  %s\n", t, r.Break)
			continue
		}
		line := fmt.Sprintf("intact  %s  %d entries", t, r.Entries)
		if r.Unchained > 0 {
			line += fmt.Sprintf(" (%d from before the chain, unchained)", r.Unchained)
		}
		line += fmt.Sprintf(", head %d %s", r.HeadSeq, r.HeadHash)
		if anchor != nil {
			line += fmt.Sprintf(", %d checked against the anchor", r.Anchored)
		}
		fmt.Fprintln(o.env.stdout, line)
	}
	checked := len(tenants)
	if all {
		// An anchored tenant that is gone is a log that was removed.
		for _, t := range anchor.Tenants() {
			if !slices.Contains(tenants, t) {
				broken++
				checked++
				fmt.Fprintf(o.env.stdout, "BROKEN  %s  in the anchor, but no longer a tenant\n", t)
			}
		}
	}
	if broken > 0 {
		return &exitStatus{code: 1, err: fmt.Errorf("audit verify: %d of %d tenants' chains are broken", broken, checked)}
	}
	_, err = fmt.Fprintf(o.env.stdout, "%d tenants: every chain intact\n", checked)
	return err
}

func walkTenant(ctx context.Context, db *postgres.DB, tenant string, anchor *audit.Anchor, fn func(*audit.Entry) error) (*audit.Report, error) {
	var r *audit.Report
	err := db.InTenantSnapshot(ctx, postgres.TenantID(tenant), func(tx pgx.Tx) error {
		var err error
		r, err = audit.Walk(ctx, tx, anchor, fn)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tenant %s: %w", tenant, err)
	}
	return r, nil
}

func exportAudit(ctx context.Context, o *auditOptions, db *postgres.DB, tenants []string) (err error) {
	var w io.Writer = o.env.stdout
	var tmp *os.File
	if o.Out != "" {
		if tmp, err = os.CreateTemp(filepath.Dir(o.Out), ".quavon-audit-*"); err != nil {
			return err
		}
		defer func() {
			if tmp != nil {
				tmp.Close()
				os.Remove(tmp.Name())
			}
		}()
		w = tmp
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	var entries int64
	broken := 0
	for _, t := range tenants {
		r, err := walkTenant(ctx, db, t, nil, func(e *audit.Entry) error {
			line, err := canonical.JSON(e)
			if err != nil {
				return fmt.Errorf("entry %d: %w", e.Seq, err)
			}
			entries++
			bw.Write(line)
			return bw.WriteByte('\n')
		})
		if err != nil {
			return err
		}
		if !r.Intact() {
			broken++
			fmt.Fprintf(o.env.stderr, "quavon: tenant %s: the chain is broken at %s\n", t, r.Break)
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	where := "stdout"
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), o.Out); err != nil {
			return err
		}
		tmp, where = nil, o.Out
	}
	fmt.Fprintf(o.env.stderr, "quavon: exported %d entries of %d tenants to %s\n", entries, len(tenants), where)
	if broken > 0 {
		return &exitStatus{code: 1, err: fmt.Errorf("audit export: %d of %d tenants' chains are broken (exported as they are)", broken, len(tenants))}
	}
	return nil
}
