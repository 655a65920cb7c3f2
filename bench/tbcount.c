// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for bench/insn.sh: counts how often the guest runs each
 * translated block and, when QEMU exits, writes one line per block that ran,
 * "<guest address in hex> <instructions in the block> <executions>", to the
 * file named by the plugin argument out=FILE.
 *
 * The counters are added to by code QEMU inlines into the translated blocks,
 * without atomics: run the guest with one vCPU for exact counts.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct block {
	uint64_t vaddr;
	uint64_t insns;		/* 0: the slot is free */
	uint64_t runs;
};

/* An open-addressing table; a guest runs far fewer distinct blocks. */
#define SLOTS (1u << 22)

static struct block *blocks;
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *out;

/* The slot of the block at @vaddr of @insns instructions, NULL if full. */
static struct block *slot(uint64_t vaddr, uint64_t insns)
{
	uint64_t i = (vaddr * 0x9e3779b97f4a7c15ull ^ insns) & (SLOTS - 1);

	for (;;) {
		struct block *b = &blocks[i];

		if (!b->insns) {
			if (used == SLOTS / 2)
				return NULL;
			used++;
			b->vaddr = vaddr;
			b->insns = insns;
			return b;
		}
		if (b->vaddr == vaddr && b->insns == insns)
			return b;
		i = (i + 1) & (SLOTS - 1);
	}
}

/* A block was translated: count its executions from now on. */
static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b;

	pthread_mutex_lock(&lock);
	b = slot(qemu_plugin_tb_vaddr(tb), qemu_plugin_tb_n_insns(tb));
	pthread_mutex_unlock(&lock);
	if (b)
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &b->runs, 1);
}

static void write_out(qemu_plugin_id_t id, void *data)
{
	FILE *f = fopen(out, "w");
	size_t i;

	if (!f) {
		perror(out);
		return;
	}
	if (used == SLOTS / 2)
		fprintf(stderr, "tbcount: table full, counts are incomplete\n");
	for (i = 0; i < SLOTS; i++)
		if (blocks[i].runs)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
				blocks[i].vaddr, blocks[i].insns, blocks[i].runs);
	if (fclose(f))
		perror(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out = strdup(argv[i] + 4);
	if (!out) {
		fprintf(stderr, "tbcount: usage: -plugin tbcount.so,out=FILE\n");
		return -1;
	}
	blocks = calloc(SLOTS, sizeof(*blocks));
	if (!blocks)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, write_out, NULL);
	return 0;
}
