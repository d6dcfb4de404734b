# Floem's runtime archive: every C file of src/ and library/ beside this file, compiled with
# CC and CFLAGS (-I of include/ added) and archived with AR as ARCHIVE. A generated
# Makefile runs it when the archive it links is missing from the build cache:
#
#   make -f runtime/runtime.mk ARCHIVE=PATH CC=gcc AR=ar CFLAGS='-O2 ...'
#
# The objects are made in a directory of their own beside ARCHIVE, and the archive is put
# in place whole, by a rename, so that builds sharing it may run at once.
ARCHIVE ?= libfloem.a
AR ?= ar
here := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
sources := $(sort $(wildcard $(here)/src/*.c)) $(sort $(wildcard $(here)/library/*.c))
$(shell mkdir -p $(dir $(ARCHIVE)))
work := $(shell mktemp -d $(ARCHIVE).XXXXXX)
objects := $(foreach s,$(sources),$(work)/$(notdir $(patsubst %/,%,$(dir $(s))))_$(notdir $(s:.c=.o)))

$(ARCHIVE): $(objects)
	$(AR) rcs $(work)/archive.a $(objects)
	mv -f $(work)/archive.a $@
	rm -rf $(work)

$(work)/src_%.o: $(here)/src/%.c
	$(CC) $(CFLAGS) -I$(here)/include -c $< -o $@

$(work)/library_%.o: $(here)/library/%.c
	$(CC) $(CFLAGS) -I$(here)/include -c $< -o $@

.PHONY: $(ARCHIVE)
