# npm-install.sh is sourced by the scripts that install a test dependency
# from the npm registry into a cache directory of its own.
#
# npm_install_once NAME CACHE PKG VERSION [EXTRA...] installs PKG@VERSION
# (and the EXTRA package specs) into CACHE unless CACHE already holds that
# version of PKG and, for each EXTRA, its package; NAME prefixes messages.
# It fails when npm is missing or the install does not leave PKG there.
npm_install_once() {
	local name=$1 cache=$2 pkg=$3 version=$4
	shift 4
	local manifest=$cache/node_modules/$pkg/package.json
	npm_installed() {
		[ -f "$manifest" ] || return 1
		local extra
		for extra in "$@"; do
			[ -f "$cache/node_modules/${extra%@*}/package.json" ] || return 1
		done
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$manifest" "$version"
	}
	npm_installed "$@" && return 0
	if ! command -v npm >/dev/null 2>&1; then
		echo "$name: npm is not installed (apt-get install nodejs npm)" >&2
		return 1
	fi
	echo "$name: installing $pkg@$version into $cache" >&2
	mkdir -p "$cache"
	npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$pkg@$version" "$@" >&2
	npm_installed "$@" || { echo "$name: $pkg is missing after the install" >&2; return 1; }
}
