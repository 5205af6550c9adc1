// Included by probe.cu; the rebuild test edits it to check header dependencies.
#pragma once
#define PROBE_SCALE 2.0f
