# Floem's runtime archive: every C file of src/ and library/ beside this file, compiled with
# CC and CFLAGS and archived with AR as ARCHIVE, its sources kept beside it (what the
# archive's debugging information names). A generated Makefile runs it when the archive
# it links is missing from the build cache:
#
#   make -f runtime/runtime.mk ARCHIVE=PATH CC=gcc AR=ar CFLAGS='-O2 ...'
#
# It is made in a directory of its own beside ARCHIVE and put in place whole, by a rename,
# so that builds sharing it may run at once.
ARCHIVE ?= libfloem.a
AR ?= ar
here := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
home := $(patsubst %/,%,$(dir $(ARCHIVE)))
$(shell mkdir -p $(home))
work := $(shell mktemp -d $(ARCHIVE).XXXXXX)
$(shell cp -r $(here)/src $(here)/library $(here)/include $(work))
sources := $(sort $(wildcard $(work)/src/*.c)) $(sort $(wildcard $(work)/library/*.c))
objects := $(foreach s,$(sources),$(patsubst $(work)/%.c,$(work)/%.o,$(s)))

$(ARCHIVE): $(objects)
	$(AR) rcs $(work)/archive.a $(objects)
	rm -f $(objects)
	for d in src library include; do [ -e $(home)/$$d ] || mv $(work)/$$d $(home)/$$d; done
	mv -f $(work)/archive.a $@
	rm -rf $(work)

$(work)/%.o: $(work)/%.c
	$(CC) $(CFLAGS) -ffile-prefix-map=$(work)=$(home) -I$(work)/include -c $< -o $@

.PHONY: $(ARCHIVE)
