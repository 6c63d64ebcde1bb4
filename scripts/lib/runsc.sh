# scripts/lib/runsc.sh — gVisor's runsc from Debian, for scripts/test and scripts/scan.
# Sourced; the caller defines log, warn, die, RUNSC (install path), CACHE_DIR (apt cache) and
# tmp_dir (scratch).

# is_static FILE: true if FILE is a statically linked executable.
# (ldd exits non-zero for static binaries, hence no pipe under pipefail.)
is_static() {
	local out
	out="$(LC_ALL=C ldd "$1" 2>&1)" || true
	[[ "$out" == *"not a dynamic executable"* || "$out" == *"statically linked"* ]]
}

# fetch_runsc_deb SUITE [PACKAGE]: download the runsc (or PACKAGE's) .deb of Debian SUITE
# into $CACHE_DIR/apt-SUITE with a private apt configuration (own sources list, lists and
# cache; the system's sources and installed-package state are untouched). Prints the .deb's
# path.
fetch_runsc_deb() {
	local suite=$1 pkg=${2:-runsc} dir="$CACHE_DIR/apt-$1"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/debs"
	echo "deb http://deb.debian.org/debian $suite main" >"$dir/sources.list"
	local opts=(
		-o "Dir::Etc::SourceList=$dir/sources.list"
		-o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists"
		-o "Dir::Cache=$dir/cache"
		-o Dir::State::status=/dev/null
		# Only Packages indices: skip the DEP-11 metadata that appstream configures.
		-o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
		# `download` writes to the current directory, which _apt cannot write to.
		-o APT::Sandbox::User=root
	)
	apt-get "${opts[@]}" update -qq >&2 || return 1
	rm -f "$dir/debs/${pkg}"_*.deb
	(cd "$dir/debs" && apt-get "${opts[@]}" download -qq "$pkg" >&2) || return 1
	compgen -G "$dir/debs/${pkg}_*.deb"
}

install_runsc() {
	if [[ -x "$RUNSC" ]] && "$RUNSC" --version >/dev/null 2>&1; then
		return 0
	fi
	local deb
	log "installing runsc from Debian trixie into $RUNSC"
	if ! deb="$(fetch_runsc_deb trixie)"; then
		warn "could not fetch trixie's runsc; falling back to bookworm's (ptrace platform only)"
		deb="$(fetch_runsc_deb bookworm)" || die "could not download runsc from Debian"
	fi
	local x="$tmp_dir/runsc-deb"
	dpkg-deb -x "$deb" "$x"
	[[ -x "$x/usr/bin/runsc" ]] || die "$deb has no usr/bin/runsc"
	is_static "$x/usr/bin/runsc" || die "runsc from $deb is not a static binary"
	"$x/usr/bin/runsc" --version >/dev/null || die "runsc from $deb does not run"
	install -m 0755 "$x/usr/bin/runsc" "$RUNSC"
}

# enable_shmem_huge_pages: the kernel's huge pages for shared memory set to advise when they
# are off (never, deny), so gVisor's request for them on the sandbox's memory (runsc
# --app-huge-pages, its default) is granted; only mappings that ask change. Scans run about 13%
# faster under runsc. What internal/devenv does for scripts/test and quavon dev
# (docker.EnableShmemTHP: the comment there has the measurements).
enable_shmem_huge_pages() {
	local f=/sys/kernel/mm/transparent_hugepage/shmem_enabled v
	[[ -r "$f" ]] || { warn "this kernel has no $f: gVisor runs on 4 KiB pages"; return 0; }
	[[ "$(<"$f")" =~ \[([a-z_]+)\] ]] || { warn "$f: no selected value"; return 0; }
	v=${BASH_REMATCH[1]}
	case "$v" in
	never | deny)
		if echo advise >"$f" 2>/dev/null; then
			log "huge pages for gVisor: $f was $v, now advise"
		else
			warn "cannot set $f to advise: gVisor runs on 4 KiB pages, scans more slowly"
		fi
		;;
	esac
}

# runsc_platform: systrap if this runsc has it (gVisor >= mid-2023), else ptrace.
runsc_platform() {
	# No `| grep -q` here or below: under pipefail, grep exiting early SIGPIPEs the writer.
	local flags
	flags="$("$RUNSC" flags 2>&1)" || true
	if [[ "$flags" == *systrap* ]]; then echo systrap; else echo ptrace; fi
}


# runsc_runtime_args PLATFORM: the runtimeArgs of Docker's runsc runtime, as a JSON array.
# --platform: systrap (or ptrace); the runner checks it against QUAVON_SANDBOX_RUNSC_PLATFORM.
# --network=none: these hosts give runsc no network of its own (egress is tested on runc).
# --oci-seccomp: apply the container's seccomp profile to the sandboxed processes too (gVisor
#   ignores it otherwise); the runner refuses a runsc runtime without it.
runsc_runtime_args() {
	printf '["--platform=%s", "--network=none", "--oci-seccomp"]' "$1"
}
