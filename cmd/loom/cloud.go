//go:build cloud

package main

// Built with -tags cloud, the loom binary can keep artifacts in cloud
// buckets (--artifacts s3://..., gs://..., azblob://...). The drivers add
// some 44 MB to the binary, so they are left out by default.
import (
	_ "gocloud.dev/blob/azureblob" // azblob:// artifact buckets
	_ "gocloud.dev/blob/gcsblob"   // gs:// artifact buckets
	_ "gocloud.dev/blob/s3blob"    // s3:// artifact buckets
)
