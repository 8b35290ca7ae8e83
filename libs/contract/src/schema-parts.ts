/** Pieces shared by the JSON Schemas. */
export const dateTime = { type: 'string', format: 'date-time', maxLength: 64 } as const;
