module nested
