#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Operations on a file descriptor that the calling shell holds open, for
tests that keep a disk or a file open across its removal (t15-unload.sh),
where reopening it by name is not possible any more.

    fd.py read FD           reads 4096 bytes at offset 0
    fd.py report-zones FD   asks the disk for a report of up to 64 zones
                            (ioctl BLKREPORTZONE)

Prints the number of bytes read or zones reported, or the errno's name.
"""
import errno
import fcntl
import os
import struct
import sys

# struct blk_zone_report (include/uapi/linux/blkzoned.h): sector, nr_zones,
# flags, then nr_zones struct blk_zone of 64 bytes each.
REPORT_HEADER = struct.Struct("=QII")
ZONE_SIZE = 64
# _IOWR(0x12, 130, struct blk_zone_report)
BLKREPORTZONE = (3 << 30) | (REPORT_HEADER.size << 16) | (0x12 << 8) | 130


def report_zones(fd, max_zones=64):
    buf = bytearray(REPORT_HEADER.size + max_zones * ZONE_SIZE)
    REPORT_HEADER.pack_into(buf, 0, 0, max_zones, 0)
    fcntl.ioctl(fd, BLKREPORTZONE, buf)
    return REPORT_HEADER.unpack_from(buf, 0)[1]


def main():
    op, fd = sys.argv[1], int(sys.argv[2])
    try:
        if op == "read":
            print(len(os.pread(fd, 4096, 0)))
        elif op == "report-zones":
            print(report_zones(fd))
        else:
            sys.exit(f"fd.py: unknown operation {op}")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))


if __name__ == "__main__":
    main()
