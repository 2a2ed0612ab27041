"""Build the FRU 0 image of the emulated BMC (IPMI FRU spec 1.3: header, chassis, board, product areas).

Prints the length and the bytes for the ``mc_add_fru_data`` line of bmc.emu.
"""


def tl(s):
    b = s.encode()
    return bytes([0xC0 | len(b)]) + b


def area(body):
    data = bytearray(body) + b"\xc1"  # end-of-fields marker
    while (len(data) + 1) % 8:
        data += b"\x00"
    data[1] = (len(data) + 1) // 8
    data += bytes([(-sum(data)) & 0xFF])
    return bytes(data)


chassis = area(bytes([1, 0, 0x17]) + tl("CSE-GPU-8U") + tl("CHS-0001"))
board = area(
    bytes([1, 0, 0, 0x10, 0x2B, 0xA5])
    + tl("Emulated Boards")
    + tl("GPU-BASEBOARD-X1")
    + tl("BRD-0001")
    + tl("BB-X1-PN")
    + tl("")
)
product = area(
    bytes([1, 0, 0])
    + tl("gpuops emulator")
    + tl("GPU-NODE-8X")
    + tl("GN8X-PN")
    + tl("1.0")
    + tl("PRD-0001")
    + tl("")
    + tl("")
)
hdr = [1, 0, 1, 1 + len(chassis) // 8, 1 + (len(chassis) + len(board)) // 8, 0, 0]
hdr.append((-sum(hdr)) & 0xFF)
data = bytes(hdr) + chassis + board + product
print(len(data))
print(" ".join("0x%02x" % b for b in data))
