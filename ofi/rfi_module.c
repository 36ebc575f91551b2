/*
 * rfi_module.c - what makes libri2n-fi.so: the objects come from the rfi
 * archive (rfi_prov.c has fi_prov_ini); this file only names the module.
 */
#include "rfi.h"

const char *rfi_module_name(void);

const char *rfi_module_name(void)
{
	return RFI_PROV_NAME;
}
