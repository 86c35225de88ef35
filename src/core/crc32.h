// crc32.h — CRC-32 (IEEE 802.3, the polynomial of zlib, gzip and PNG): checksums of
// checkpoint tensors and metadata. The same value as Python's zlib.crc32(bytes), so any
// tool can verify a file without this code.
#pragma once
#include <stddef.h>
#include <stdint.h>

// crc32_update(0, p, n) is the CRC of p[0..n); chain calls to checksum pieces in order.
uint32_t crc32_update(uint32_t crc, const void *data, size_t n);
