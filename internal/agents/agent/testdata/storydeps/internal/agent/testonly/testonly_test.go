package testonly

import _ "example.com/m/internal/story"
