"""Runs a command in a pseudo-terminal of a given width and saves what it printed.

Usage: pty_run.py COLUMNS OUTPUT COMMAND [ARG...]; exits with the command's exit code.
The terminal's size is set before the command starts, so that it reads it
(TIOCGWINSZ) as a user's terminal of that width.
"""
import fcntl
import os
import struct
import subprocess
import sys
import termios

columns, output, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: every writer closed the terminal
        break
    if not chunk:
        break
    data += chunk
with open(output, "wb") as f:
    f.write(data)
sys.exit(proc.wait())
