#!/usr/bin/env bash
# build.sh builds Grove's agent image without any container registry: a
# Debian bookworm root filesystem made by debootstrap from the machine's own
# apt mirror, tarred and imported into the local Docker engine.
#
#   build.sh [--variant full|lean] [--rootfs-only OUT.tar] [--force]
#
# The tag is grove/agent-sandbox[-lean]:<hash of this script>, so a change to
# the package list or the set-up below gives a new tag, and an unchanged
# script reuses the image (and, for CI reruns, the cached rootfs tarball
# under $GROVE_CACHE, default /var/cache/grove).
#
# --rootfs-only writes the tarball and stops: Grove's Go side imports it
# through the Engine API instead of the docker CLI.
set -euo pipefail

variant=full
rootfs_only=
force=
while [ $# -gt 0 ]; do
	case "$1" in
	--variant) variant=$2; shift 2 ;;
	--rootfs-only) rootfs_only=$2; shift 2 ;;
	--force) force=1; shift ;;
	*) echo "usage: $0 [--variant full|lean] [--rootfs-only OUT.tar] [--force]" >&2; exit 2 ;;
	esac
done

case "$variant" in
full)
	# Debug adapters (DAP) and a C toolchain: lldb-19 brings lldb-dap,
	# python3-debugpy the Python adapter; gcc and libc6-dev build what
	# lldb-dap debugs. lldb-19 pulls libllvm19 and libclang-cpp19 (about
	# 250 MB installed together), the price of a C/C++/Rust debugger.
	# python3-debugpy depends on gdb, whose libsource-highlight4v5 needs the
	# virtual libboost-regex1.74.0-icu72, which debootstrap cannot resolve:
	# libboost-regex1.74.0 provides it and is named here.
	packages=git,git-lfs,ripgrep,fd-find,jq,curl,ca-certificates,tini,python3,nodejs,gcc,libc6-dev,lldb-19,python3-debugpy,libboost-regex1.74.0
	repo=grove/agent-sandbox ;;
lean)
	packages=git,ripgrep,ca-certificates,tini
	repo=grove/agent-sandbox-lean ;;
*) echo "unknown variant $variant" >&2; exit 2 ;;
esac

# The hash covers this script (package lists and set-up steps included).
hash=$(sha256sum "$0" | cut -c1-12)
tag="$repo:$hash"
cache=${GROVE_CACHE:-/var/cache/grove}
tarball="$cache/agent-sandbox-$variant-$hash.tar"

log() { printf '[agent-sandbox %s] %s\n' "$(date +%T)" "$*" >&2; }

if [ -z "$rootfs_only" ] && [ -z "$force" ] && docker image inspect "$tag" >/dev/null 2>&1; then
	log "$tag exists; nothing to do"
	echo "$tag"
	exit 0
fi

# The mirror comes from this machine's apt configuration, never from the repo:
# the first deb URI serving bookworm, deb822 (.sources) or one-line format.
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN{RS="";FS="\n"} /Types:[^\n]*deb( |\n|$)/ && /Suites:[^\n]*bookworm( |\n|$)/ {
			for (i=1;i<=NF;i++) if ($i ~ /^URIs:/) { split($i,a," "); print a[2]; exit } }' "$f"
	done
	{ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } |
		awk '$1=="deb" && $0 ~ / bookworm / { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }'
}

if [ -n "$force" ] || [ ! -s "$tarball" ]; then
	url=$(mirror | head -n1 || true)
	[ -n "$url" ] || { echo "no bookworm deb source in /etc/apt; cannot debootstrap" >&2; exit 1; }
	command -v debootstrap >/dev/null || { echo "debootstrap is not installed" >&2; exit 1; }
	mkdir -p "$cache/debs"
	work=$(mktemp -d "${TMPDIR:-/tmp}/agent-sandbox.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	root="$work/rootfs"
	log "debootstrap bookworm ($variant: $packages)"
	debootstrap --variant=minbase --cache-dir="$cache/debs" --include="$packages" \
		bookworm "$root" "$url" >&2

	log "configure: agent user, git identity, fd and lldb-dap symlinks"
	chroot "$root" /usr/sbin/groupadd --gid 1000 agent
	chroot "$root" /usr/sbin/useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash agent
	if [ -x "$root/usr/bin/fdfind" ]; then ln -sf /usr/bin/fdfind "$root/usr/local/bin/fd"; fi
	if [ -e "$root/usr/bin/lldb-dap-19" ]; then ln -sf /usr/bin/lldb-dap-19 "$root/usr/local/bin/lldb-dap"; fi
	if [ -x "$root/usr/bin/git-lfs" ]; then chroot "$root" git lfs install --system --skip-repo >/dev/null; fi
	cat >>"$root/etc/gitconfig" <<'GITCONFIG'
[user]
	name = Grove Agent
	email = agent@grove.invalid
[init]
	defaultBranch = main
[safe]
	# Workspaces are bind-mounted from the host and owned by the host's user.
	directory = *
[core]
	# Hooks are never run from a repository inside the sandbox either.
	hooksPath = /dev/null
GITCONFIG

	log "slim: apt caches, docs, locales"
	rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/* \
		"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
		"$root"/usr/share/locale/* "$root"/usr/share/lintian "$root"/tmp/* "$root"/var/tmp/*
	mkdir -p "$cache"
	tar --numeric-owner -C "$root" -cf "$tarball.part" .
	mv "$tarball.part" "$tarball"
	log "rootfs $(du -h "$tarball" | cut -f1) at $tarball"
fi

if [ -n "$rootfs_only" ]; then
	cp "$tarball" "$rootfs_only"
	exit 0
fi

log "import $tag"
docker import \
	--change 'USER agent' \
	--change 'WORKDIR /home/agent' \
	--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8' \
	--change 'ENTRYPOINT ["/usr/bin/tini", "--"]' \
	--change 'CMD ["sleep", "infinity"]' \
	--change "LABEL dev.grove.image=agent-sandbox dev.grove.variant=$variant dev.grove.inputs=$hash" \
	"$tarball" "$tag" >&2
docker tag "$tag" "$repo:latest"
echo "$tag"
