//===- compiler/backend/ObjectLoader.cpp - Objects linked without LLVM ----===//

#include "compiler/backend/ObjectLoader.h"

#include <cstring>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace gatherjit {
namespace {

using RangeFn = int64_t (*)(const void *, const void *, void *, int64_t, int64_t);

class LoadedKernel final : public Executable {
public:
  LoadedKernel(void *Base, size_t Bytes, RangeFn Entry) : Base(Base), Bytes(Bytes), Entry(Entry) {}
  ~LoadedKernel() override { ::munmap(Base, Bytes); }
  int64_t runRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                  int64_t End) const override {
    return Entry(Input, Indices, Output, Begin, End);
  }
  void *entryAddress() const override { return reinterpret_cast<void *>(Entry); }

private:
  void *Base;
  size_t Bytes;
  RangeFn Entry;
};

/// The functions a kernel object may call.
uint64_t externalSymbol(std::string_view Name) {
  if (Name == "memcpy")
    return reinterpret_cast<uint64_t>(&::memcpy);
  if (Name == "memmove")
    return reinterpret_cast<uint64_t>(&::memmove);
  if (Name == "memset")
    return reinterpret_cast<uint64_t>(&::memset);
  return 0;
}

Status refuse(const std::string &Why) {
  return Status::unsupported("cannot link the kernel object without LLVM: " + Why);
}

/// Larger sections (a zero-filled one need not be in the file) are refused.
constexpr uint64_t MaxSectionBytes = 64u << 20;

uint64_t alignTo(uint64_t Value, uint64_t Align) { return (Value + Align - 1) / Align * Align; }

/// One allocation group: code, read-only data, writable data.
enum Group { Code, ReadOnly, Writable, NumGroups };

#if defined(__x86_64__)
/// One object being linked: each step a function, in the order
/// loadKernelObject calls them. The mapping is freed unless release()
/// hands it to the kernel.
class ObjectLink {
public:
  explicit ObjectLink(std::string_view Object) : Bytes(Object.data()), Size(Object.size()) {}
  ~ObjectLink() {
    if (Base)
      ::munmap(Base, Total);
  }
  ObjectLink(const ObjectLink &) = delete;
  ObjectLink &operator=(const ObjectLink &) = delete;

  /// Reads the ELF header, the section headers and the symbol table.
  Status parse();
  /// Places each allocated section in its group, each group on its own
  /// pages, with the stubs and GOT slots the symbols may need.
  Status layout();
  /// Maps the pages and copies the sections' bytes in.
  Status map();
  /// Applies every relocation of a loaded section.
  Status relocate();
  /// The address of the global function \p Name.
  Expected<uint64_t> entry(const std::string &Name);
  /// Makes code executable and read-only data read-only.
  Status protect();
  /// The kernel running \p Entry; the mapping is the kernel's from now on.
  std::shared_ptr<const Executable> release(uint64_t Entry);

private:
  std::string_view symbolName(const Elf64_Sym &Sym) const;
  /// Where symbol \p Index is, or false if it is not the kernel's own or
  /// a function it may call.
  bool address(size_t Index, uint64_t &Out) const;
  /// A jump stub to \p Target for a PC-relative call to symbol \p Index.
  uint64_t stub(size_t Index, uint64_t Target);
  /// A GOT slot holding \p Target for symbol \p Index.
  uint64_t got(size_t Index, uint64_t Target);
  Status relocateSection(const Elf64_Shdr &R);
  Status apply(const Elf64_Rela &Rel, const Elf64_Shdr &Target, char *Into);

  /// Stubs are a 6-byte indirect jump and its 8-byte target. Code starts
  /// after a pad, as it would in a linked program (after its headers): the
  /// bytes before a function must be readable, because clang's
  /// -fsanitize=function reads the 8 before any function called through a
  /// pointer.
  static constexpr uint64_t StubBytes = 16, CodePad = 16;

  const char *Bytes;
  uint64_t Size;
  std::vector<Elf64_Shdr> Sections;
  std::vector<Elf64_Sym> Symbols;
  const Elf64_Shdr *StrTab = nullptr;
  uint64_t Page = 0;
  std::vector<uint64_t> Offset;
  std::vector<bool> Placed;
  uint64_t GroupBegin[NumGroups] = {}, GroupEnd[NumGroups] = {};
  uint64_t StubsAt = 0, GotAt = 0, Total = 0;
  char *Base = nullptr;
};

Status ObjectLink::parse() {
  Elf64_Ehdr Header;
  if (Size < sizeof(Header))
    return refuse("the object is truncated");
  std::memcpy(&Header, Bytes, sizeof(Header));
  if (std::memcmp(Header.e_ident, ELFMAG, SELFMAG) != 0 || Header.e_ident[EI_CLASS] != ELFCLASS64 ||
      Header.e_ident[EI_DATA] != ELFDATA2LSB || Header.e_type != ET_REL ||
      Header.e_machine != EM_X86_64 || Header.e_shentsize != sizeof(Elf64_Shdr) ||
      Header.e_shoff > Size || Header.e_shnum > (Size - Header.e_shoff) / sizeof(Elf64_Shdr))
    return refuse("not a relocatable x86-64 ELF object");
  Sections.resize(Header.e_shnum);
  std::memcpy(Sections.data(), Bytes + Header.e_shoff, Sections.size() * sizeof(Elf64_Shdr));
  const Elf64_Shdr *SymTab = nullptr;
  for (const Elf64_Shdr &S : Sections) {
    if (S.sh_type != SHT_NOBITS && (S.sh_offset > Size || S.sh_size > Size - S.sh_offset))
      return refuse("a section lies outside the object");
    if (S.sh_size > MaxSectionBytes)
      return refuse("a section is larger than any kernel's");
    if (S.sh_type == SHT_SYMTAB)
      SymTab = &S;
  }
  if (!SymTab || SymTab->sh_entsize != sizeof(Elf64_Sym) || SymTab->sh_link >= Sections.size() ||
      Sections[SymTab->sh_link].sh_type != SHT_STRTAB)
    return refuse("no symbol table");
  Symbols.resize(SymTab->sh_size / sizeof(Elf64_Sym));
  std::memcpy(Symbols.data(), Bytes + SymTab->sh_offset, Symbols.size() * sizeof(Elf64_Sym));
  StrTab = &Sections[SymTab->sh_link];
  return Status::ok();
}

std::string_view ObjectLink::symbolName(const Elf64_Sym &Sym) const {
  if (Sym.st_name >= StrTab->sh_size)
    return {};
  const char *Begin = Bytes + StrTab->sh_offset + Sym.st_name;
  return std::string_view(Begin, strnlen(Begin, StrTab->sh_size - Sym.st_name));
}

Status ObjectLink::layout() {
  Page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  Offset.assign(Sections.size(), 0);
  Placed.assign(Sections.size(), false);
  uint64_t At = 0;
  for (int G = 0; G < NumGroups; ++G) {
    At = GroupBegin[G] = alignTo(At, Page);
    if (G == Code)
      At += CodePad;
    for (size_t I = 0; I < Sections.size(); ++I) {
      const Elf64_Shdr &S = Sections[I];
      if (!(S.sh_flags & SHF_ALLOC) || S.sh_size == 0)
        continue;
      const Group Kind = (S.sh_flags & SHF_EXECINSTR) ? Code
                         : (S.sh_flags & SHF_WRITE)   ? Writable
                                                      : ReadOnly;
      if (Kind != G)
        continue;
      const uint64_t Align = S.sh_addralign ? S.sh_addralign : 1;
      if ((Align & (Align - 1)) != 0 || Align > Page)
        return refuse("a section's alignment is not a power of two up to a page");
      Offset[I] = At = alignTo(At, Align);
      Placed[I] = true;
      At += S.sh_size;
    }
    if (G == Code) {
      StubsAt = At = alignTo(At, StubBytes);
      At += StubBytes * Symbols.size();
    } else if (G == ReadOnly) {
      GotAt = At = alignTo(At, 8);
      At += 8 * Symbols.size();
    }
    GroupEnd[G] = At;
  }
  Total = alignTo(At, Page);
  return Status::ok();
}

Status ObjectLink::map() {
  void *Map = ::mmap(nullptr, Total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (Map == MAP_FAILED)
    return Status::internal("mapping a kernel's code failed");
  Base = static_cast<char *>(Map);
  std::memset(Base + GroupBegin[Code], 0xcc, CodePad); // int3
  for (size_t I = 0; I < Sections.size(); ++I)
    if (Placed[I] && Sections[I].sh_type != SHT_NOBITS)
      std::memcpy(Base + Offset[I], Bytes + Sections[I].sh_offset, Sections[I].sh_size);
  return Status::ok();
}

bool ObjectLink::address(size_t Index, uint64_t &Out) const {
  const Elf64_Sym &Sym = Symbols[Index];
  if (Sym.st_shndx == SHN_UNDEF) {
    Out = externalSymbol(symbolName(Sym));
    return Out != 0;
  }
  if (Sym.st_shndx == SHN_ABS) {
    Out = Sym.st_value;
    return true;
  }
  if (Sym.st_shndx >= Sections.size() || !Placed[Sym.st_shndx] ||
      Sym.st_value > Sections[Sym.st_shndx].sh_size)
    return false;
  Out = reinterpret_cast<uint64_t>(Base + Offset[Sym.st_shndx] + Sym.st_value);
  return true;
}

uint64_t ObjectLink::stub(size_t Index, uint64_t Target) {
  char *P = Base + StubsAt + StubBytes * Index;
  const unsigned char Jump[6] = {0xff, 0x25, 0, 0, 0, 0}; // jmp *0(%rip)
  std::memcpy(P, Jump, sizeof(Jump));
  std::memcpy(P + sizeof(Jump), &Target, 8);
  return reinterpret_cast<uint64_t>(P);
}

uint64_t ObjectLink::got(size_t Index, uint64_t Target) {
  char *P = Base + GotAt + 8 * Index;
  std::memcpy(P, &Target, 8);
  return reinterpret_cast<uint64_t>(P);
}

Status ObjectLink::relocate() {
  for (const Elf64_Shdr &R : Sections) {
    if (R.sh_type == SHT_REL)
      return refuse("REL relocations");
    if (R.sh_type != SHT_RELA)
      continue;
    if (R.sh_info >= Sections.size() || R.sh_entsize != sizeof(Elf64_Rela))
      return refuse("a malformed relocation section");
    if (!Placed[R.sh_info])
      continue; // Of debug information or an empty section: not loaded.
    if (Status S = relocateSection(R); !S)
      return S;
  }
  return Status::ok();
}

Status ObjectLink::relocateSection(const Elf64_Shdr &R) {
  const Elf64_Shdr &Target = Sections[R.sh_info];
  char *Into = Base + Offset[R.sh_info];
  for (uint64_t E = 0; E < R.sh_size / sizeof(Elf64_Rela); ++E) {
    Elf64_Rela Rel;
    std::memcpy(&Rel, Bytes + R.sh_offset + E * sizeof(Rel), sizeof(Rel));
    if (Status S = apply(Rel, Target, Into); !S)
      return S;
  }
  return Status::ok();
}

Status ObjectLink::apply(const Elf64_Rela &Rel, const Elf64_Shdr &Target, char *Into) {
  const uint32_t Type = ELF64_R_TYPE(Rel.r_info);
  const size_t Sym = ELF64_R_SYM(Rel.r_info);
  if (Type == R_X86_64_NONE)
    return Status::ok();
  const uint64_t Width = Type == R_X86_64_64 || Type == R_X86_64_PC64 ? 8 : 4;
  if (Sym >= Symbols.size() || Rel.r_offset > Target.sh_size ||
      Target.sh_size - Rel.r_offset < Width)
    return refuse("a relocation outside its section");
  uint64_t S;
  if (!address(Sym, S))
    return refuse("the symbol " + std::string(symbolName(Symbols[Sym])) +
                  " is not the kernel's own or memcpy, memmove, memset");
  const bool External = Symbols[Sym].st_shndx == SHN_UNDEF;
  const uint64_t P = reinterpret_cast<uint64_t>(Into + Rel.r_offset);
  const uint64_t A = static_cast<uint64_t>(Rel.r_addend);
  int64_t Value64;
  switch (Type) {
  case R_X86_64_64:
    Value64 = static_cast<int64_t>(S + A);
    std::memcpy(Into + Rel.r_offset, &Value64, 8);
    return Status::ok();
  case R_X86_64_PC64:
    Value64 = static_cast<int64_t>(S + A - P);
    std::memcpy(Into + Rel.r_offset, &Value64, 8);
    return Status::ok();
  case R_X86_64_PC32:
  case R_X86_64_PLT32:
    Value64 = static_cast<int64_t>((External ? stub(Sym, S) : S) + A - P);
    break;
  case R_X86_64_GOTPCREL:
  case R_X86_64_GOTPCRELX:
  case R_X86_64_REX_GOTPCRELX:
    Value64 = static_cast<int64_t>(got(Sym, S) + A - P);
    break;
  case R_X86_64_32:
    if (S + A > UINT32_MAX)
      return refuse("a 32-bit absolute address out of range");
    Value64 = static_cast<int64_t>(S + A);
    break;
  case R_X86_64_32S:
    Value64 = static_cast<int64_t>(S + A);
    if (Value64 < INT32_MIN || Value64 > INT32_MAX)
      return refuse("a 32-bit absolute address out of range");
    break;
  default:
    return refuse("relocation type " + std::to_string(Type));
  }
  if (Type != R_X86_64_32 && (Value64 < INT32_MIN || Value64 > INT32_MAX))
    return refuse("a 32-bit displacement out of range");
  const uint32_t Value32 = static_cast<uint32_t>(Value64);
  std::memcpy(Into + Rel.r_offset, &Value32, 4);
  return Status::ok();
}

Expected<uint64_t> ObjectLink::entry(const std::string &Name) {
  uint64_t Entry = 0;
  for (size_t I = 0; I < Symbols.size(); ++I)
    if (ELF64_ST_BIND(Symbols[I].st_info) == STB_GLOBAL &&
        ELF64_ST_TYPE(Symbols[I].st_info) == STT_FUNC && Symbols[I].st_shndx != SHN_UNDEF &&
        symbolName(Symbols[I]) == Name && address(I, Entry))
      return Entry;
  return refuse("the object defines no function " + Name);
}

Status ObjectLink::protect() {
  const int Protect[NumGroups] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
  for (int G = 0; G < NumGroups; ++G) {
    const uint64_t End = alignTo(GroupEnd[G], Page);
    if (End > GroupBegin[G] &&
        ::mprotect(Base + GroupBegin[G], End - GroupBegin[G], Protect[G]) != 0)
      return Status::internal("protecting a kernel's code failed");
  }
  return Status::ok();
}

std::shared_ptr<const Executable> ObjectLink::release(uint64_t Entry) {
  char *Map = std::exchange(Base, nullptr);
  return std::make_shared<LoadedKernel>(Map, Total, reinterpret_cast<RangeFn>(Entry));
}
#endif

} // namespace

Expected<std::shared_ptr<const Executable>> loadKernelObject(std::string_view Object,
                                                             const std::string &Name) {
#if !defined(__x86_64__)
  (void)Object;
  (void)Name;
  return refuse("only x86-64 objects are linked here");
#else
  ObjectLink Link(Object);
  for (Status (ObjectLink::*Step)() :
       {&ObjectLink::parse, &ObjectLink::layout, &ObjectLink::map, &ObjectLink::relocate})
    if (Status S = (Link.*Step)(); !S)
      return S;
  Expected<uint64_t> Entry = Link.entry(Name + "_range");
  if (!Entry)
    return Entry.status();
  if (Status S = Link.protect(); !S)
    return S;
  return Link.release(*Entry);
#endif
}

} // namespace gatherjit
