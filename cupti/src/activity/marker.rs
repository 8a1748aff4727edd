//! NVTX marker records.

use std::{ffi::CStr, marker::PhantomData};

use cupti_sys as sys;

use super::records::cstr;

view!(
    /// An NVTX marker or range end (`CUpti_ActivityMarker2`).
    MarkerRecord, sys::CUpti_ActivityMarker2
);

getters!(MarkerRecord {
    /// `CUpti_ActivityFlag` bits (instantaneous / start / end …).
    flags: u32 = flags.0;
    /// Timestamp, ns.
    timestamp: u64 = timestamp;
    /// Marker id (pairs start and end).
    id: u32 = id;
});

impl<'a> MarkerRecord<'a> {
    /// The message (start and instantaneous markers).
    pub fn name(&self) -> Option<&'a CStr> {
        cstr(self.raw.name)
    }
    /// The NVTX domain name (`None`: default domain).
    pub fn domain(&self) -> Option<&'a CStr> {
        cstr(self.raw.domain)
    }
}

impl std::fmt::Debug for MarkerRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkerRecord")
            .field("id", &self.id())
            .field("flags", &self.flags())
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

view!(
    /// Extra data of a marker (`CUpti_ActivityMarkerData2`).
    MarkerDataRecord, sys::CUpti_ActivityMarkerData2
);

getters!(MarkerDataRecord {
    /// `CUpti_ActivityFlag` bits (color set or not).
    flags: u32 = flags.0;
    /// Marker id.
    id: u32 = id;
    /// ARGB color.
    color: u32 = color;
    /// Category.
    category: u32 = category;
});

impl std::fmt::Debug for MarkerDataRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkerDataRecord")
            .field("id", &self.id())
            .field("color", &self.color())
            .finish_non_exhaustive()
    }
}
