/* scripts/cross/musl-unwind.c - what gcc's unwinder (libgcc_eh.a, built for glibc) asks
 * the C library for and musl does not have. scripts/cross.sh compiles it into the
 * libunwind.a it gives the musl targets built with -Z build-std: only the tests unwind
 * (libtest catches a failing test's panic); the release binaries abort on a panic and
 * link none of this.
 *
 * 32-bit ARM: the EHABI unwinder finds the exception index table through
 * __gnu_Unwind_Find_exidx; in a static executable it is the linker's
 * __exidx_start..__exidx_end.
 * Elsewhere: gcc 12 built against glibc 2.35 or later finds the unwind tables of the
 * code at PC with _dl_find_object (glibc 2.35) and has no other way; this one answers
 * from dl_iterate_phdr, which musl has: the object's PT_LOAD span and its
 * PT_GNU_EH_FRAME segment (the .eh_frame_hdr the unwinder searches).
 */
#define _GNU_SOURCE
#include <stdint.h>

#ifdef __ARM_EABI__
extern char __exidx_start[], __exidx_end[];

unsigned long __gnu_Unwind_Find_exidx(unsigned long pc, int *count)
{
    (void)pc;
    *count = (__exidx_end - __exidx_start) / 8;
    return (unsigned long)__exidx_start;
}
#else
#include <dlfcn.h>
#include <link.h>

struct query {
    uintptr_t pc;
    struct dl_find_object *out;
    int found;
};

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    struct query *q = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    void *eh_frame = 0;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD) {
            if (start < lo)
                lo = start;
            if (start + p->p_memsz > hi)
                hi = start + p->p_memsz;
        } else if (p->p_type == PT_GNU_EH_FRAME) {
            eh_frame = (void *)start;
        }
    }
    if (q->pc < lo || q->pc >= hi)
        return 0;
    q->out->dlfo_flags = 0;
    q->out->dlfo_map_start = (void *)lo;
    q->out->dlfo_map_end = (void *)hi;
    q->out->dlfo_link_map = 0;
    q->out->dlfo_eh_frame = eh_frame;
    q->found = 1;
    return 1;
}

int _dl_find_object(void *pc, struct dl_find_object *out)
{
    struct query q = { (uintptr_t)pc, out, 0 };
    dl_iterate_phdr(visit, &q);
    return q.found ? 0 : -1;
}
#endif
