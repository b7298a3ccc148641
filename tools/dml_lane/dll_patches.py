"""Byte patches that let the lane's Wine 8 load Wine 10's Direct3D 12 stack (vkd3d 1.14).

Input: four x86-64 PE DLLs of Debian trixie's `libwine` 10.0~repack-6 (amd64),
usr/lib/x86_64-linux-gnu/wine/x86_64-windows/{d3d12,d3d12core,dxgi,wined3d}.dll. Wine 10 links
vkd3d 1.14 (libvkd3d + vkd3d-shader) into wined3d.dll; d3d12.dll is a thin wrapper over it.

Safety: a file is identified by its SHA-256 before anything is written, and any other binary is
refused (`PatchRefused`). Every site's original bytes are checked first (and, in wined3d.dll, the
COFF symbol of the function that holds it); nothing is written unless all match. The result is
written atomically, re-read, and must have the pinned patched SHA-256. A file that already has
the patched hash is left alone, so patching is idempotent.

Measured one patch at a time (docs/dml-lane.md): marker only -> the DML EP cannot be created
(DirectML treats E_NOTIMPL from EnumerateMetaCommands as fatal); + metacmd -> fused graphs run,
but DirectML's DXIL shaders are refused (80004005); + dxil -> vkd3d_shader_compile refuses the
source type (80070057); + src/tgt -> every probe matches the CPU EP exactly.

Adapted from the in-house reference recipe (shared/dml-lane/patch_wined3d.py); the sites were
found with `objdump -d -l` on the DLL, which keeps its COFF symbols and DWARF line info. The vkd3d
functions named below are in vkd3d 1.14's libs/vkd3d/device.c, libs/vkd3d/state.c and
libs/vkd3d-shader/vkd3d_shader_main.c.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from dataclasses import dataclass

#: the Debian package the pins below belong to
PACKAGE = "libwine"
VERSION = "10.0~repack-6"
DLLS = ("d3d12.dll", "d3d12core.dll", "dxgi.dll", "wined3d.dll")

#: SHA-256 of the originals in libwine 10.0~repack-6 (amd64)
ORIGINAL = {
    "d3d12.dll": "e141d9fb57fce667f08f0e2bd08d78283a8febfd77a2a7e6d57c6d7aebe0cfbc",
    "d3d12core.dll": "a9f76c89221acb4785df0dde697a5ed2fe9b4a96ab1d10bbe409186c69332492",
    "dxgi.dll": "2ffe5876a27810b96d083b5d6fd061718429fbf76b13f583329735c2cfab10bd",
    "wined3d.dll": "c56a150af3c9a1538686c5c89faf1d28d697b2bee25e68e08369eb54e0a426c4",
}
#: SHA-256 after patching: the marker in all four, the vkd3d sites in wined3d.dll
PATCHED = {
    "d3d12.dll": "40522c76258900aa931abc1992abd94afc621b5b9031305b337d70791676b4d7",
    "d3d12core.dll": "e07e0fd20768ab4dfb9eee61974ac0a23a0722603b20c254f93717cc50338846",
    "dxgi.dll": "46903a3529301f867885f833cdc80a3898463674da8c82de11a8a1a451c5986c",
    "wined3d.dll": "968dcc1a7d70a87129ebf7c1b58e4f754b29c78f9502a69b2f082d8180019a44",
}


class PatchRefused(Exception):
    """The file is not the pinned binary, or a site does not hold the expected bytes."""


@dataclass(frozen=True)
class Site:
    what: str
    rva: int | None  # None: a file offset in the DOS header (the marker)
    function: str | None  # COFF symbol of the function holding the site (wined3d.dll)
    old: bytes
    new: bytes


def _hex(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


#: Wine marks its own PE builds with "Wine builtin DLL" at 0x40; Wine 8 refuses another Wine
#: version's builtin in place of its own (load_dll ... status=c0000135). With the marker changed,
#: Wine 8 treats the four as native DLLs, loaded through WINEDLLOVERRIDES=...=n.
MARKER = Site(
    "marker: 'Wine builtin DLL' -> 'Xine builtin DLL'",
    None,
    None,
    b"Wine builtin DLL",
    b"Xine builtin DLL",
)
MARKER_OFFSET = 0x40

VKD3D_SITES = (
    Site(
        "1 metacmd: ID3D12Device::EnumerateMetaCommands returns S_OK with *count = 0 (was E_NOTIMPL)",
        0x3ADC0,
        "d3d12_device_EnumerateMetaCommands",
        # sub rsp,0x38; ...; call vkd3d_dbg_printf (FIXME); mov eax,0x80004001; add rsp,0x38; ret
        _hex(
            "48 83 ec 38 4c 89 44 24 28 49 89 c9 4c 8d 05 c5 73 1f 00 b9 03 00 00 00 48 89 54 24 20"
            "48 8d 15 3c e9 1f 00 e8 d7 dd 0e 00 b8 01 40 00 80 48 83 c4 38 c3"
        ),
        _hex(
            "48 83 ec 38"  # sub rsp,0x38 (same prologue: the unwind info stays valid)
            "48 85 d2 74 06"  # test rdx,rdx; je +6          (UINT *num_meta_commands)
            "c7 02 00 00 00 00"  # mov dword [rdx],0
            "31 c0 48 83 c4 38 c3"
        )  # xor eax,eax (S_OK); add rsp,0x38; ret
        + b"\x90" * (0x33 - 22),
    ),  # the rest of the old body, unreachable
    Site(
        "2 dxil-a: create_shader_stage() accepts a DXIL chunk (source type DXBC_DXIL)",
        0x24574,
        "create_shader_stage",
        # inlined vkd3d_shader_parse_dxbc_source_type(): the chunk loop knew SHDR/SHEX only
        _hex(
            "31 d2 31 c0 0f 1f 84 00 00 00 00 00 48 8d 04 40 41 8b 04 c1 3d 53 48 44 52 0f 84 c5 00 00 00"
            "3d 53 48 45 58 0f 84 ba 00 00 00 8d 42 01 48 89 c2 48 39 c8 72 d7"
        ),
        _hex(
            "41 8b 01"  # loop: mov eax,[r9] (chunk tag)
            "3d 53 48 44 52 0f 84 d6 00 00 00"  # cmp 'SHDR'; je TPF (unchanged target)
            "3d 53 48 45 58 0f 84 cb 00 00 00"  # cmp 'SHEX'; je TPF
            "3d 44 58 49 4c 74 0c"  # cmp 'DXIL'; je set_dxil
            "49 83 c1 18 48 83 e9 01 75 d6"  # next chunk (24 bytes); loop while rcx
            "eb 09"  # not found: the old error path
            "c6 84 24 d0 00 00 00 04 90"
        ),
    ),  # set_dxil: compile_info.source_type = 4 (DXBC_DXIL)
    Site(
        "2 dxil-b: the UAV-counter scan accepts a DXIL chunk (defensive; same loop)",
        0x40B20,
        "d3d12_pipeline_state_find_and_init_uav_counters.part.0",
        _hex(
            "31 d2 31 c0 66 66 2e 0f 1f 84 00 00 00 00 00 90 48 8d 04 40 41 8b 04 c0 3d 53 48 44 52"
            "0f 84 dd 00 00 00 3d 53 48 45 58 0f 84 d2 00 00 00 8d 42 01 48 89 c2 48 39 c8 72 d7"
        ),
        _hex(
            "41 8b 00"
            "3d 53 48 44 52 0f 84 f2 00 00 00"
            "3d 53 48 45 58 0f 84 e7 00 00 00"
            "3d 44 58 49 4c 74 0c"
            "49 83 c0 18 48 83 e9 01 75 d6"
            "eb 0d"
            "c7 84 24 c0 00 00 00 04 00 00 00 90 90"
        ),
    ),
    Site(
        "3 src: vkd3d_shader_get_supported_source_types() lists DXIL (in place of FX)",
        0x22B2B0,
        "types.11",
        _hex(
            "01 00 00 00 02 00 00 00 03 00 00 00 05 00 00 00"
        ),  # {TPF, HLSL, D3DBC, FX}
        _hex("01 00 00 00 02 00 00 00 03 00 00 00 04 00 00 00"),
    ),  # {TPF, HLSL, D3DBC, DXIL}
    Site(
        "3 tgt-a: vkd3d_shader_validate_compile_info(): DXIL gets the TPF targets {SPIRV_BINARY, D3D_ASM}",
        0x133BE0,
        "vkd3d_shader_validate_compile_info",
        _hex("83 ff 05 75 1b"),  # cmp edi,5 (FX); jne none
        _hex("83 ff 04 74 4b"),
    ),  # cmp edi,4 (DXIL); je the TPF target list
    Site(
        "3 tgt-b: vkd3d_shader_get_supported_target_types(DXIL) -> the TPF list",
        0x130F40,
        "vkd3d_shader_get_supported_target_types",
        _hex(
            "ba 01 00 00 00 48 8d 05 fc a2 0f 00 83 fb 05 74 e3"
        ),  # count 1, fx_types, if FX
        _hex("ba 02 00 00 00 48 8d 05 2c a3 0f 00 83 fb 04 74 e3"),
    ),  # count 2, dxbc_tpf_types, if DXIL
)


def sites_for(name: str) -> tuple[Site, ...]:
    return (MARKER, *VKD3D_SITES) if name == "wined3d.dll" else (MARKER,)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class PE:
    """Just enough of a PE32+ image: its sections (RVA -> file offset) and COFF symbols."""

    def __init__(self, data: bytes):
        if data[:2] != b"MZ":
            raise PatchRefused("not a PE file (no MZ)")
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe : pe + 4] != b"PE\0\0":
            raise PatchRefused("not a PE file (no PE signature)")
        machine, nsec, _, self.symtab, self.nsyms, optsize, _ = struct.unpack_from(
            "<HHIIIHH", data, pe + 4
        )
        if machine != 0x8664:
            raise PatchRefused(f"not an x86-64 PE (machine {machine:#x})")
        first = pe + 24 + optsize
        self.sections = []
        for i in range(nsec):
            _, vsize, va, rawsize, rawptr = struct.unpack_from(
                "<8sIIII", data, first + 40 * i
            )
            self.sections.append((va, max(vsize, rawsize), rawptr))
        self.data = data

    def offset(self, rva: int) -> int:
        for va, size, raw in self.sections:
            if va <= rva < va + size:
                return raw + rva - va
        raise PatchRefused(f"RVA {rva:#x} is in no section")

    def function_at(self, rva: int) -> set[str]:
        """Names of the COFF symbols at the greatest address <= rva: the function holding rva."""
        strtab = self.symtab + 18 * self.nsyms
        best, names, i = -1, set(), 0
        while i < self.nsyms:
            raw, value, secno, _, _, naux = struct.unpack_from(
                "<8sIhHBB", self.data, self.symtab + 18 * i
            )
            i += 1 + naux
            if not 1 <= secno <= len(self.sections):
                continue
            if raw[:4] == b"\0\0\0\0":
                o = strtab + struct.unpack_from("<I", raw, 4)[0]
                name = self.data[o : self.data.index(b"\0", o)].decode(
                    "ascii", "replace"
                )
            else:
                name = raw.rstrip(b"\0").decode("ascii", "replace")
            addr = self.sections[secno - 1][0] + value
            if name.startswith(".") or addr > rva or addr < best:
                continue
            if addr > best:
                best, names = addr, set()
            names.add(name)
        return names


def state(name: str, data: bytes) -> str:
    """'original', 'patched' or 'unknown' for the DLL `name` with contents `data`."""
    digest = sha256(data)
    return (
        "original"
        if digest == ORIGINAL.get(name)
        else "patched"
        if digest == PATCHED.get(name)
        else "unknown"
    )


def _file_offset(pe: PE, site: Site) -> int:
    return MARKER_OFFSET if site.rva is None else pe.offset(site.rva)


def patched_bytes(name: str, data: bytes) -> bytes:
    """The patched contents of DLL `name`, or PatchRefused. Pure: writes nothing."""
    if name not in PATCHED:
        raise PatchRefused(f"{name}: not one of {', '.join(DLLS)}")
    st = state(name, data)
    if st == "patched":
        return data
    if st != "original":
        raise PatchRefused(
            f"{name}: unknown binary (sha256 {sha256(data)}); only {name} of Debian {PACKAGE} "
            f"{VERSION} amd64 (sha256 {ORIGINAL[name]}) is patched"
        )
    pe = PE(data)
    out = bytearray(data)
    for site in sites_for(name):
        off = _file_offset(pe, site)
        if len(site.old) != len(site.new):
            raise AssertionError(f"{site.what}: the patch changes the length")
        if bytes(out[off : off + len(site.old)]) != site.old:
            raise PatchRefused(f"{name}: {site.what}: unexpected bytes at {off:#x}")
        if site.function and site.function not in pe.function_at(site.rva):
            raise PatchRefused(
                f"{name}: {site.what}: RVA {site.rva:#x} is in {sorted(pe.function_at(site.rva))}, "
                f"expected {site.function}"
            )
    for site in sites_for(name):
        off = _file_offset(pe, site)
        out[off : off + len(site.new)] = site.new
    result = bytes(out)
    if sha256(result) != PATCHED[name]:
        raise PatchRefused(
            f"{name}: patched sha256 {sha256(result)} is not the pinned {PATCHED[name]}"
        )
    return result


def write_atomic(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(
        dir=os.path.dirname(os.path.abspath(path)), prefix=".tmp-"
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def patch_file(src: str, dst: str) -> None:
    """Patch DLL `src` (named as in DLLS) into `dst`; re-read and check the pinned hash."""
    name = os.path.basename(src).lower()
    with open(src, "rb") as f:
        result = patched_bytes(name, f.read())
    write_atomic(dst, result)
    with open(dst, "rb") as f:
        if sha256(f.read()) != PATCHED[name]:
            raise PatchRefused(f"{dst}: verification after writing failed")
