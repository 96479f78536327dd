// Command bcryptdll writes a test harness's stand-in bcryptprimitives.dll
// for Wine before 8.13 (Debian 12's Wine 8.0), where every Go >= 1.22
// program dies at start: the runtime loads bcryptprimitives!ProcessPrng,
// which Wine added in 8.13. It is used by hack/wine.sh only, in the Wine
// prefix the Windows job makes, and never shipped: a minimal PE32+ (x64)
// DLL with no code, only an export table whose entries are forwarders
// ("DLL.Function" strings):
//
//	go run ./test/wine/bcryptdll $WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll
//
// ProcessPrng(PBYTE, SIZE_T) BOOL is forwarded to advapi32!SystemFunction036
// (RtlGenRandom(PVOID, ULONG) BOOLEAN); on amd64 both take the buffer in RCX
// and the length in RDX, and the Go runtime only tests the result for != 0.
//
// Layout (file offset == RVA - 0x1000 + 0x200):
//
//	0x000 DOS header (64 bytes) ; 0x040 "PE\0\0" ; 0x044 COFF header (20)
//	0x058 optional header PE32+ (112 + 16*8 = 240) ; 0x148 section header (40)
//	0x200 .rdata section (RVA 0x1000): export directory and everything it uses.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// Forwarder is one export: Name is the exported name, Target is "dll.Function"
// (or "dll.#ordinal") that the loader resolves instead.
type Forwarder struct{ Name, Target string }

const (
	fileAlign = 0x200
	sectAlign = 0x1000
	sectRVA   = 0x1000 // RVA of the only section
	hdrSize   = 0x200  // SizeOfHeaders (headers rounded up to fileAlign)
)

func align(n, a uint32) uint32 { return (n + a - 1) &^ (a - 1) }

// ForwarderDLL returns the bytes of a DLL named dllName whose exports are all
// forwarders. Exports are sorted by name, as the loader binary-searches the
// name pointer table.
func ForwarderDLL(dllName string, exports []Forwarder) []byte {
	exps := append([]Forwarder(nil), exports...)
	sort.Slice(exps, func(i, j int) bool { return exps[i].Name < exps[j].Name })
	n := uint32(len(exps))

	// ---- .rdata section contents; every offset below is relative to sectRVA.
	const edSize = 40        // IMAGE_EXPORT_DIRECTORY
	eatOff := uint32(edSize) // Export Address Table: n x RVA (uint32)
	enptOff := eatOff + 4*n  // Export Name Pointer Table: n x RVA (uint32)
	eotOff := enptOff + 4*n  // Export Ordinal Table: n x uint16
	strOff := eotOff + 2*n   // strings start here
	var strs bytes.Buffer    // string pool, each NUL-terminated
	addStr := func(s string) uint32 {
		off := strOff + uint32(strs.Len())
		strs.WriteString(s)
		strs.WriteByte(0)
		return sectRVA + off
	}
	dllNameRVA := addStr(dllName)
	nameRVA := make([]uint32, n)
	targetRVA := make([]uint32, n)
	for i, e := range exps {
		nameRVA[i] = addStr(e.Name)
		// A forwarder is an EAT entry whose RVA points INSIDE the range given
		// by DataDirectory[EXPORT]; the string lives in that range.
		targetRVA[i] = addStr(e.Target)
	}
	exportSize := strOff + uint32(strs.Len()) // whole export data = dir range

	sec := new(bytes.Buffer)
	le := binary.LittleEndian
	w := func(v any) { binary.Write(sec, le, v) }
	// IMAGE_EXPORT_DIRECTORY
	w(uint32(0))          // Characteristics
	w(uint32(0))          // TimeDateStamp
	w(uint16(0))          // MajorVersion
	w(uint16(0))          // MinorVersion
	w(dllNameRVA)         // Name (RVA of DLL name)
	w(uint32(1))          // Base (first ordinal)
	w(n)                  // NumberOfFunctions (EAT entries)
	w(n)                  // NumberOfNames
	w(sectRVA + eatOff)   // AddressOfFunctions
	w(sectRVA + enptOff)  // AddressOfNames
	w(sectRVA + eotOff)   // AddressOfNameOrdinals
	w(targetRVA)          // EAT: forwarder string RVAs
	w(nameRVA)            // name pointers (sorted)
	for i := range exps { // ordinal table: name i -> EAT index i
		w(uint16(i))
	}
	sec.Write(strs.Bytes())
	rawSize := align(uint32(sec.Len()), fileAlign)
	virtSize := uint32(sec.Len())

	// ---- headers
	h := new(bytes.Buffer)
	hw := func(v any) { binary.Write(h, le, v) }
	// IMAGE_DOS_HEADER (64 bytes): only e_magic and e_lfanew matter.
	hw([]byte("MZ"))         // e_magic
	hw(make([]byte, 0x3a))   // e_cblp .. e_res2 (unused)
	hw(uint32(0x40))         // e_lfanew: PE header right after DOS header
	hw([]byte("PE\x00\x00")) // PE signature
	// IMAGE_FILE_HEADER (COFF)
	hw(uint16(0x8664)) // Machine: IMAGE_FILE_MACHINE_AMD64
	hw(uint16(1))      // NumberOfSections
	hw(uint32(0))      // TimeDateStamp
	hw(uint32(0))      // PointerToSymbolTable
	hw(uint32(0))      // NumberOfSymbols
	hw(uint16(240))    // SizeOfOptionalHeader (PE32+ with 16 dirs)
	hw(uint16(0x2022)) // Characteristics: DLL|LARGE_ADDRESS_AWARE|EXECUTABLE_IMAGE
	// IMAGE_OPTIONAL_HEADER64
	hw(uint16(0x20b))                        // Magic: PE32+
	hw(uint8(14))                            // MajorLinkerVersion
	hw(uint8(0))                             // MinorLinkerVersion
	hw(uint32(0))                            // SizeOfCode
	hw(rawSize)                              // SizeOfInitializedData
	hw(uint32(0))                            // SizeOfUninitializedData
	hw(uint32(0))                            // AddressOfEntryPoint: none (no DllMain)
	hw(uint32(0))                            // BaseOfCode
	hw(uint64(0x180000000))                  // ImageBase
	hw(uint32(sectAlign))                    // SectionAlignment
	hw(uint32(fileAlign))                    // FileAlignment
	hw(uint16(6))                            // MajorOperatingSystemVersion
	hw(uint16(0))                            // MinorOperatingSystemVersion
	hw(uint16(0))                            // MajorImageVersion
	hw(uint16(0))                            // MinorImageVersion
	hw(uint16(6))                            // MajorSubsystemVersion
	hw(uint16(0))                            // MinorSubsystemVersion
	hw(uint32(0))                            // Win32VersionValue
	hw(sectRVA + align(virtSize, sectAlign)) // SizeOfImage
	hw(uint32(hdrSize))                      // SizeOfHeaders
	hw(uint32(0))                            // CheckSum (not checked for DLLs)
	hw(uint16(3))                            // Subsystem: WINDOWS_CUI
	hw(uint16(0x160))                        // DllCharacteristics: HIGH_ENTROPY_VA|DYNAMIC_BASE|NX_COMPAT (no relocs needed: no code)
	hw(uint64(0x100000))                     // SizeOfStackReserve
	hw(uint64(0x1000))                       // SizeOfStackCommit
	hw(uint64(0x100000))                     // SizeOfHeapReserve
	hw(uint64(0x1000))                       // SizeOfHeapCommit
	hw(uint32(0))                            // LoaderFlags
	hw(uint32(16))                           // NumberOfRvaAndSizes
	hw(uint32(sectRVA))                      // DataDirectory[0] EXPORT: RVA
	hw(exportSize)                           //                          Size
	hw(make([]byte, 15*8))                   // DataDirectory[1..15]: empty
	// IMAGE_SECTION_HEADER
	hw([]byte(".rdata\x00\x00")) // Name
	hw(virtSize)                 // VirtualSize
	hw(uint32(sectRVA))          // VirtualAddress
	hw(rawSize)                  // SizeOfRawData
	hw(uint32(hdrSize))          // PointerToRawData
	hw(uint32(0))                // PointerToRelocations
	hw(uint32(0))                // PointerToLinenumbers
	hw(uint16(0))                // NumberOfRelocations
	hw(uint16(0))                // NumberOfLinenumbers
	hw(uint32(0x40000040))       // Characteristics: CNT_INITIALIZED_DATA|MEM_READ

	out := make([]byte, hdrSize+rawSize)
	copy(out, h.Bytes())
	copy(out[hdrSize:], sec.Bytes())
	return out
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bcryptdll OUTPUT.dll  (writes bcryptprimitives.dll forwarding ProcessPrng)")
		os.Exit(2)
	}
	dll := ForwarderDLL("bcryptprimitives.dll", []Forwarder{
		{"ProcessPrng", "advapi32.SystemFunction036"},
	})
	if err := os.WriteFile(os.Args[1], dll, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
