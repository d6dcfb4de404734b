# Sourced by run.sh and instructions.sh: checkout_queue REV DIR puts revision REV's
# runtime/include/floem/queue.h and runtime/src/queue.c under DIR (DIR/floem/queue.h,
# DIR/queue.c), or exits with status 2 if REV is not a revision of the repository ($root).
checkout_queue() {
    local rev="$1" dir="$2"
    if ! git -C "$root" rev-parse --verify --quiet "$rev^{commit}" >/dev/null; then
        echo "$(basename "$0"): $rev is not a revision of $root" >&2
        exit 2
    fi
    mkdir -p "$dir/floem"
    git -C "$root" show "$rev:runtime/include/floem/queue.h" > "$dir/floem/queue.h"
    git -C "$root" show "$rev:runtime/src/queue.c" > "$dir/queue.c"
    # queue.h includes floem/runtime.h since the ring layout (its thread's pending list)
    if git -C "$root" cat-file -e "$rev:runtime/include/floem/runtime.h" 2>/dev/null; then
        git -C "$root" show "$rev:runtime/include/floem/runtime.h" > "$dir/floem/runtime.h"
    fi
}
