/* isal — the checksums ddpsim takes from ISA-L (Intel's Intelligent Storage
 * Acceleration Library), opened on first use so that commands that need no
 * checksum start without it.
 *
 * The library is $DDPSIM_ISAL when set, else the soname and the file the
 * build found, then libisal.so (core/dl.h). A missing library or symbol is
 * CORE_EUNSUPPORTED with a message naming the library and what to install. */
#ifndef DDPSIM_CORE_ISAL_H
#define DDPSIM_CORE_ISAL_H

#include <stddef.h>
#include <stdint.h>

/* 1 when ISA-L loads (the first call loads it); 0 when it cannot, with
 * the reason (CORE_EUNSUPPORTED) as the current message: a command that
 * will need a checksum can stop before it writes anything. */
int core_isal_available(void);

/* CRC-32C (Castagnoli, as iSCSI and TensorBoard's records use it) of n bytes. */
int core_isal_crc32c(const void *p, size_t n, uint32_t *crc);

/* Chains n bytes onto *crc with ISA-L's reflected CRC-64/ECMA-182 (start
 * from 0). */
int core_isal_crc64(const void *p, size_t n, uint64_t *crc);

#endif
