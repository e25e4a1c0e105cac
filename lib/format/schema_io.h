// Conversions shared by the index and plan readers and writers: raw-byte paths to and
// from Cap'n Proto Data, and the Filesystem record both formats carry. Internal to lib/.
#pragma once

#include <string>

#include "format/common.capnp.h"
#include "lib/format/index_file.h"

namespace oans::schema_io {

inline kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

inline std::string FromData(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

inline void WriteFs(schema::Filesystem::Builder b, const FsRecord& f) {
  b.setUuid(f.uuid);
  b.setSubvolume(f.subvolume);
  b.setDev(f.dev);
  b.setFsType(f.type);
  b.setBlockSize(f.block_size);
  b.setMountPoint(f.mount_point);
  b.setSubvolumeUuid(f.subvolume_uuid);
  b.setGeneration(f.generation);
}

inline FsRecord ReadFs(schema::Filesystem::Reader r) {
  FsRecord f;
  f.uuid = r.getUuid();
  f.subvolume = r.getSubvolume();
  f.dev = r.getDev();
  f.type = r.getFsType();
  f.block_size = r.getBlockSize();
  f.mount_point = r.getMountPoint();
  f.subvolume_uuid = r.getSubvolumeUuid();
  f.generation = r.getGeneration();
  return f;
}

}  // namespace oans::schema_io
